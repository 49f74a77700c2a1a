package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// TestShedWriter: single responses refusing a call for load get the table's status and
// Retry-After in whole seconds, rounded up; every other body keeps 200 and no header.
func TestShedWriter(t *testing.T) {
	overloaded := gateway.NewError(schemas.CodeOverloaded)
	tests := []struct {
		name       string
		out        []byte
		wantStatus int
		wantRetry  string
		wantAuth   string // WWW-Authenticate
	}{
		{"5002, 1 ms", appendError(nil, jsonrpc.NumberID(1), overloaded.With("retry_after_ms", int64(1)), "t"), 503, "1", ""},
		{"5002, 1000 ms", appendError(nil, jsonrpc.NumberID(1), overloaded.With("retry_after_ms", int64(1000)), "t"), 503, "1", ""},
		{"5002, 1001 ms", appendError(nil, jsonrpc.NumberID(1), overloaded.With("retry_after_ms", int64(1001)), "t"), 503, "2", ""},
		{"5002, fractional ms from a backend", appendError(nil, jsonrpc.StringID("a"), overloaded.With("retry_after_ms", 2500.5), "t"), 503, "3", ""},
		{"5002 without retry_after_ms", appendError(nil, jsonrpc.NumberID(1), overloaded, "t"), 503, "", ""},
		{"5002, retry_after_ms 0", appendError(nil, jsonrpc.NumberID(1), overloaded.With("retry_after_ms", 0), "t"), 503, "", ""},
		{"5002, retry_after_ms not a number", appendError(nil, jsonrpc.NumberID(1), overloaded.With("retry_after_ms", "soon"), "t"), 503, "", ""},
		{"5001", appendError(nil, jsonrpc.NumberID(1), gateway.NewError(schemas.CodeRateLimited).With("retry_after_ms", int64(250)), "t"), 429, "1", ""},
		{"another error with retry_after_ms", appendError(nil, jsonrpc.NumberID(1), gateway.NewError(schemas.CodeCircuitOpen).With("retry_after_ms", int64(3000)), "t"), 200, "", ""},
		{"a result", jsonrpc.AppendResult(nil, jsonrpc.NumberID(1), []byte(`{"error":{"code":5002}}`)), 200, "", ""},
		{"a batch of refusals", []byte(`[` + string(appendError(nil, jsonrpc.NumberID(1), overloaded.With("retry_after_ms", int64(5)), "t")) + `]`), 200, "", ""},
		{"nothing (notifications)", nil, 200, "", ""},
		{"4002 lists the missing scopes in its challenge", appendError(nil, jsonrpc.NumberID(1),
			gateway.NewError(schemas.CodeInsufficientScope).With("missing_scopes", []string{"calc.write", "calc.admin"}), "t"), 403, "",
			`Bearer realm="gatehouse", error="insufficient_scope", scope="calc.write calc.admin"`},
		{"4003", appendError(nil, jsonrpc.NumberID(1), gateway.NewError(schemas.CodeApprovalDenied), "t"), 403, "", ""},
		{"4000 stays 200", appendError(nil, jsonrpc.NumberID(1), gateway.NewError(schemas.CodeAuthorization), "t"), 200, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			w := shedWriter(rec, tt.out)
			w.WriteHeader(http.StatusOK)
			if rec.Code != tt.wantStatus {
				t.Errorf("status %d, want %d", rec.Code, tt.wantStatus)
			}
			if got := rec.Header().Get("Retry-After"); got != tt.wantRetry {
				t.Errorf("Retry-After %q, want %q", got, tt.wantRetry)
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != tt.wantAuth {
				t.Errorf("WWW-Authenticate %q, want %q", got, tt.wantAuth)
			}
			if uw, ok := w.(interface{ Unwrap() http.ResponseWriter }); ok && uw.Unwrap() != rec {
				t.Error("the writer does not unwrap to the response's")
			}
		})
	}
}

// TestShedOverHTTP: a call the admission stage sheds reaches an HTTP caller as 503 with
// Retry-After (in JSON and MessagePack); a batch of shed calls as 200.
func TestShedOverHTTP(t *testing.T) {
	p := &probe{delay: 30 * time.Second, started: make(chan string, 1)}
	ts := start(t, baseConfig+`
admission:
  global: {initial_limit: 1, min_limit: 1, max_limit: 1}
`, probes{"slow": p}.asTargets())
	ctx, cancel := context.WithCancel(context.Background())
	held := ts.callAsync(ctx, `{"jsonrpc":"2.0","method":"slow","id":1}`)
	<-p.started
	defer func() {
		cancel()
		receive(t, held)
	}()

	status, hdr, body := ts.post(`{"jsonrpc":"2.0","method":"slow","id":2}`)
	r := decodeOne(t, body)
	if status != http.StatusServiceUnavailable || r.Error == nil || r.Error.Code != 5002 || r.Error.Data["reason"] != "global_limit" {
		t.Fatalf("single shed call: HTTP %d %s", status, body)
	}
	if hdr.Get("Retry-After") != "1" || hdr.Get("Content-Type") != jsonContentType {
		t.Errorf("headers %v, want Retry-After: 1 and JSON", hdr)
	}

	status, hdr, raw := ts.postMsgpack(mpFromJSON(t, `{"jsonrpc":"2.0","method":"slow","id":3}`))
	if status != http.StatusServiceUnavailable || hdr.Get("Retry-After") != "1" || !strings.Contains(mpToJSON(t, raw), `"code":5002`) {
		t.Errorf("MessagePack: HTTP %d, Retry-After %q, %s", status, hdr.Get("Retry-After"), mpToJSON(t, raw))
	}

	status, hdr, body = ts.post(`[{"jsonrpc":"2.0","method":"slow","id":4},{"jsonrpc":"2.0","method":"slow","id":5}]`)
	var batch []response
	if err := json.Unmarshal([]byte(body), &batch); err != nil {
		t.Fatal(err)
	}
	if status != http.StatusOK || hdr.Get("Retry-After") != "" || len(batch) != 2 || batch[0].Error == nil || batch[0].Error.Code != 5002 {
		t.Errorf("batch: HTTP %d, Retry-After %q, %s", status, hdr.Get("Retry-After"), body)
	}
}
