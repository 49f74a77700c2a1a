package server

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/auth"
)

// TestAdminNotifications: on the admin API a notification runs but is not answered, and a
// batch of notifications only is answered with no body (HTTP 204), as on the boundary.
func TestAdminNotifications(t *testing.T) {
	ts := startRevocations(t, "", nil)
	post := func(body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, ts.admin+"/rpc", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-API-Key", opsKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	tests := []struct {
		name     string
		body     string
		wantCode int
		wantBody string // "" : none
	}{
		{"batch of notifications", `[{"jsonrpc":"2.0","method":"` + auth.MethodRevocationsAdd + `","params":{"jti":"n-1","ttl":"1h"}},` +
			`{"jsonrpc":"2.0","method":"` + auth.MethodRevocationsAdd + `","params":{"jti":"n-2","ttl":"1h"}}]`, http.StatusNoContent, ""},
		{"one notification", `{"jsonrpc":"2.0","method":"` + auth.MethodRevocationsAdd + `","params":{"jti":"n-3","ttl":"1h"}}`, http.StatusNoContent, ""},
		{"a notification and a call", `[{"jsonrpc":"2.0","method":"` + auth.MethodRevocationsAdd + `","params":{"jti":"n-4","ttl":"1h"}},` +
			`{"jsonrpc":"2.0","id":7,"method":"` + auth.MethodRevocationsList + `"}]`, http.StatusOK, `[{"jsonrpc":"2.0","result":{"revocations":`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := post(tt.body)
			if code != tt.wantCode || !strings.HasPrefix(body, tt.wantBody) || (tt.wantBody == "" && body != "") {
				t.Fatalf("HTTP %d %q, want %d %q", code, body, tt.wantCode, tt.wantBody)
			}
		})
	}
	list := string(ts.ops(auth.MethodRevocationsList, `{}`))
	for _, jti := range []string{"n-1", "n-2", "n-3", "n-4"} {
		if !strings.Contains(list, `"`+jti+`"`) {
			t.Errorf("the notification revoking %s did not run: %s", jti, list)
		}
	}
}
