package admin

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

func TestPprof(t *testing.T) {
	const scope = "admin.pprof"
	tests := []struct {
		name       string
		gw         *fakeGateway
		path       string
		wantStatus int
		wantCode   schemas.Code // of the JSON-RPC error body; 0: no error body
	}{
		{"off", &fakeGateway{rt: fakeRuntime{scopes: []string{scope}}}, "/debug/pprof/", http.StatusNotFound, 0},
		{"off, cmdline", &fakeGateway{rt: fakeRuntime{scopes: []string{scope}}}, "/debug/pprof/cmdline", http.StatusNotFound, 0},
		{"no credential", &fakeGateway{pprofScope: scope, rt: fakeRuntime{authErr: gateway.NewError(schemas.CodeAuthentication)}},
			"/debug/pprof/", http.StatusUnauthorized, schemas.CodeAuthentication},
		{"without the scope", &fakeGateway{pprofScope: scope, rt: fakeRuntime{scopes: []string{"admin.approvals"}}},
			"/debug/pprof/", http.StatusForbidden, schemas.CodeInsufficientScope},
		{"without the scope, profile", &fakeGateway{pprofScope: scope}, "/debug/pprof/profile?seconds=1", http.StatusForbidden, schemas.CodeInsufficientScope},
		{"index", &fakeGateway{pprofScope: scope, rt: fakeRuntime{scopes: []string{scope}}}, "/debug/pprof/", http.StatusOK, 0},
		{"cmdline", &fakeGateway{pprofScope: scope, rt: fakeRuntime{scopes: []string{scope}}}, "/debug/pprof/cmdline", http.StatusOK, 0},
		{"named profile", &fakeGateway{pprofScope: scope, rt: fakeRuntime{scopes: []string{scope}}}, "/debug/pprof/goroutine?debug=1", http.StatusOK, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, h, body := do(t, tt.gw, http.MethodGet, tt.path, "", "")
			if status != tt.wantStatus {
				t.Fatalf("got %d %s, want %d", status, body, tt.wantStatus)
			}
			if tt.wantCode == 0 {
				return
			}
			var resp struct {
				Error struct {
					Code int            `json:"code"`
					Data map[string]any `json:"data"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &resp); err != nil || resp.Error.Code != int(tt.wantCode) {
				t.Fatalf("body %s: want error %d (%v)", body, tt.wantCode, err)
			}
			if h.Get("Content-Type") != "application/json" || h.Get("X-Trace-Id") == "" {
				t.Fatalf("headers %v", h)
			}
			if tt.wantStatus == http.StatusUnauthorized && !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("no challenge: %v", h)
			}
			if tt.wantStatus == http.StatusForbidden && !strings.Contains(body, `"missing_scopes":["admin.pprof"]`) {
				t.Fatalf("body %s does not name the scope", body)
			}
		})
	}
}
