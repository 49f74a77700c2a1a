package httprpc

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/faces"
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
		{"5002, 1 ms", faces.AppendError(nil, jsonrpc.NumberID(1), overloaded.With("retry_after_ms", int64(1)), "t"), 503, "1", ""},
		{"5002, 1000 ms", faces.AppendError(nil, jsonrpc.NumberID(1), overloaded.With("retry_after_ms", int64(1000)), "t"), 503, "1", ""},
		{"5002, 1001 ms", faces.AppendError(nil, jsonrpc.NumberID(1), overloaded.With("retry_after_ms", int64(1001)), "t"), 503, "2", ""},
		{"5002, fractional ms from a backend", faces.AppendError(nil, jsonrpc.StringID("a"), overloaded.With("retry_after_ms", 2500.5), "t"), 503, "3", ""},
		{"5002 without retry_after_ms", faces.AppendError(nil, jsonrpc.NumberID(1), overloaded, "t"), 503, "", ""},
		{"5002, retry_after_ms 0", faces.AppendError(nil, jsonrpc.NumberID(1), overloaded.With("retry_after_ms", 0), "t"), 503, "", ""},
		{"5002, retry_after_ms not a number", faces.AppendError(nil, jsonrpc.NumberID(1), overloaded.With("retry_after_ms", "soon"), "t"), 503, "", ""},
		{"5001", faces.AppendError(nil, jsonrpc.NumberID(1), gateway.NewError(schemas.CodeRateLimited).With("retry_after_ms", int64(250)), "t"), 429, "1", ""},
		{"another error with retry_after_ms", faces.AppendError(nil, jsonrpc.NumberID(1), gateway.NewError(schemas.CodeCircuitOpen).With("retry_after_ms", int64(3000)), "t"), 200, "", ""},
		{"a result", jsonrpc.AppendResult(nil, jsonrpc.NumberID(1), []byte(`{"error":{"code":5002}}`)), 200, "", ""},
		{"a batch of refusals", []byte(`[` + string(faces.AppendError(nil, jsonrpc.NumberID(1), overloaded.With("retry_after_ms", int64(5)), "t")) + `]`), 200, "", ""},
		{"nothing (notifications)", nil, 200, "", ""},
		{"4002 lists the missing scopes in its challenge", faces.AppendError(nil, jsonrpc.NumberID(1),
			gateway.NewError(schemas.CodeInsufficientScope).With("missing_scopes", []string{"calc.write", "calc.admin"}), "t"), 403, "",
			`Bearer realm="gatehouse", error="insufficient_scope", scope="calc.write calc.admin"`},
		{"4003", faces.AppendError(nil, jsonrpc.NumberID(1), gateway.NewError(schemas.CodeApprovalDenied), "t"), 403, "", ""},
		{"4000 stays 200", faces.AppendError(nil, jsonrpc.NumberID(1), gateway.NewError(schemas.CodeAuthorization), "t"), 200, "", ""},
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
