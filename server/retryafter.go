package server

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strconv"

	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// A single JSON-RPC request over HTTP that was refused for load — RATE_LIMITED (5001) or
// OVERLOADED (5002), whichever stage or backend refused it — is answered with the error
// table's HTTP status for the code (429, 503) instead of 200, and with a Retry-After header
// from error.data.retry_after_ms, so HTTP clients, proxies and load balancers back off
// without reading the body. One refused by authorization — INSUFFICIENT_SCOPE (4002) or
// APPROVAL_DENIED (4003) — is answered 403, and 4002 with the RFC 6750 challenge
// WWW-Authenticate: Bearer error="insufficient_scope", scope="<the missing scopes>", so a
// client can ask for a token carrying them. The body is the JSON-RPC error response as
// always. Batches keep 200: their members succeed and fail independently; so do nekte.*
// methods, whose wire contract wants every JSON-RPC error with 200 (handleRPC).
//
// shedCodes are those codes.
var shedCodes = []schemas.Code{schemas.CodeRateLimited, schemas.CodeOverloaded,
	schemas.CodeInsufficientScope, schemas.CodeApprovalDenied}

// errorResponsePrefix is how every single error response the gateway writes begins
// (jsonrpc.AppendError).
var errorResponsePrefix = []byte(`{"jsonrpc":"2.0","error":{"code":`)

// shedWriter returns w, unless out — the JSON body about to be written — is a single error
// response with a code of shedCodes: then Retry-After is set on w and the writer returned
// answers with the code's HTTP status where 200 would be written.
func shedWriter(w http.ResponseWriter, out []byte) http.ResponseWriter {
	code, ok := shedCode(out)
	if !ok {
		return w
	}
	var resp struct {
		Error struct {
			Data struct {
				RetryAfterMs  float64  `json:"retry_after_ms"`
				MissingScopes []string `json:"missing_scopes"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(out, &resp); err == nil {
		setRetryAfter(w.Header(), resp.Error.Data.RetryAfterMs)
		if code == schemas.CodeInsufficientScope {
			w.Header().Set("WWW-Authenticate", faces.ScopeChallenge(resp.Error.Data.MissingScopes, ""))
		}
	}
	return &statusWriter{ResponseWriter: w, status: schemas.KindOf(code).HTTP}
}

// shedCode returns the code of out when it is a single error response with a code of
// shedCodes.
func shedCode(out []byte) (schemas.Code, bool) {
	rest, ok := bytes.CutPrefix(out, errorResponsePrefix)
	if !ok {
		return 0, false
	}
	digits, _, ok := bytes.Cut(rest, []byte{','})
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(string(digits), 10, 32)
	if err != nil {
		return 0, false
	}
	code := schemas.Code(n)
	return code, slices.Contains(shedCodes, code)
}

// setRetryAfter sets Retry-After on h to ms milliseconds in whole seconds, rounded up
// (delay-seconds, RFC 9110 §10.2.3: 1 ms waits a second, 1000 ms one, 1001 ms two); it sets
// nothing unless ms is positive and finite.
func setRetryAfter(h http.Header, ms float64) {
	if !(ms > 0) || math.IsInf(ms, 1) {
		return
	}
	h.Set("Retry-After", strconv.FormatFloat(math.Ceil(ms/1000), 'f', 0, 64))
}

// statusWriter answers with status where its writer would answer 200.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if code == http.StatusOK {
		code = s.status
	}
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap returns the writer underneath, for http.ResponseController.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
