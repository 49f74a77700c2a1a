package faces

import (
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// What the faces over HTTP (JSON-RPC, WebSocket upgrades, MCP, admin) share: reading a
// bounded body, the caller's credentials from headers, and refusals written before any
// JSON-RPC request was read.

// ErrBodyTooLarge is ReadBody's error for a body past its limit.
var ErrBodyTooLarge = errors.New("request body too large")

// ReadBody reads the whole body into buf, failing with ErrBodyTooLarge past limit bytes.
func ReadBody(r *http.Request, limit int64, buf []byte) ([]byte, error) {
	if r.ContentLength > limit {
		return buf, ErrBodyTooLarge
	}
	if r.ContentLength > 0 && int64(cap(buf)) < r.ContentLength {
		buf = make([]byte, 0, r.ContentLength)
	}
	lr := io.LimitReader(r.Body, limit+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return buf[:0], ErrBodyTooLarge
		}
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf[:0], err
		}
	}
}

// WriteBodyError answers a body that could not be read, in enc; log receives the cause of
// a failed read.
func WriteBodyError(w http.ResponseWriter, log *slog.Logger, err error, limit int64, traceID string, enc Encoding) {
	if errors.Is(err, ErrBodyTooLarge) {
		WriteHTTPError(w, http.StatusRequestEntityTooLarge, gateway.NewError(schemas.CodePayloadTooLarge).
			With("limit", "max_body_bytes").With("max", limit), traceID, enc)
		return
	}
	log.Debug("reading request body", "trace_id", traceID, "err", err)
	WriteHTTPError(w, http.StatusBadRequest, gateway.Errorf(schemas.CodeInvalidRequest, "Could not read the request body"), traceID, enc)
}

// WriteHTTPError ends an exchange that failed before any JSON-RPC request was read: the
// body is a JSON-RPC error response with id null, in enc.
func WriteHTTPError(w http.ResponseWriter, status int, err *gateway.Error, traceID string, enc Encoding) {
	body, _ := enc.FromJSON(AppendError(nil, jsonrpc.ID{}, err, traceID), traceID)
	h := w.Header()
	h.Set("Content-Type", enc.ContentType())
	h.Set("X-Trace-Id", traceID)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// WriteChallenge answers a failed authentication with the table's HTTP status and, for
// 401, the WWW-Authenticate challenge (BearerChallenge) naming resourceMetadata, the URL
// of the OAuth protected-resource metadata (RFC 9728), when it is not empty.
func WriteChallenge(w http.ResponseWriter, err *gateway.Error, traceID string, enc Encoding, resourceMetadata string) {
	status := schemas.KindOf(err.Code()).HTTP
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", BearerChallenge(err, resourceMetadata))
	}
	WriteHTTPError(w, status, err, traceID, enc)
}

// The error codes of a bearer challenge (RFC 6750 §3.1).
const (
	challengeInvalidRequest = "invalid_request"
	challengeInvalidToken   = "invalid_token"
)

// BearerChallenge returns the WWW-Authenticate value of the 401 err: Bearer realm="gatehouse",
// with error="invalid_token" when a credential was presented and refused, or
// error="invalid_request" when the request presented several (RFC 6750 §3.1; a request
// without one, or with another scheme, gets no error code), and resource_metadata (RFC 9728
// §5.1) when resourceMetadata is not empty. It never contains any part of the credential.
func BearerChallenge(err *gateway.Error, resourceMetadata string) string {
	out := `Bearer realm="gatehouse"`
	switch auth.ReasonOf(err) {
	case "", auth.ReasonNoCredential, auth.ReasonNotLoopback, auth.ReasonUnsupportedScheme:
	case auth.ReasonAmbiguous:
		out += `, error="` + challengeInvalidRequest + `"`
	default:
		out += `, error="` + challengeInvalidToken + `"`
	}
	if resourceMetadata != "" {
		out += `, resource_metadata="` + resourceMetadata + `"`
	}
	return out
}

// ScopeChallenge returns the WWW-Authenticate value of a 403 for missing scopes (RFC 6750
// §3.1 insufficient_scope), naming them and resourceMetadata when not empty.
func ScopeChallenge(missing []string, resourceMetadata string) string {
	out := `Bearer realm="gatehouse", error="insufficient_scope"`
	if len(missing) > 0 {
		out += `, scope="` + strings.Join(missing, " ") + `"`
	}
	if resourceMetadata != "" {
		out += `, resource_metadata="` + resourceMetadata + `"`
	}
	return out
}

// IsJSON reports whether a Content-Type is application/json (parameters allowed, charset
// only utf-8).
func IsJSON(ct string) bool {
	if ct == JSONContentType {
		return true
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != JSONContentType {
		return false
	}
	cs, ok := params["charset"]
	return !ok || strings.EqualFold(cs, "utf-8")
}

// ParseDeadlineHeader parses X-Deadline-Ms; an absent header is 0, ok.
func ParseDeadlineHeader(v string) (int64, bool) {
	if v == "" {
		return 0, true
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	return ms, err == nil && ms > 0
}

// HTTPCredentials extracts the credentials of an HTTP request without reading its body.
func HTTPCredentials(r *http.Request, zone gateway.TrustZone) gateway.Credentials {
	creds := gateway.Credentials{Zone: zone, APIKey: r.Header.Get("X-API-Key")}
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		creds.Bearer = strings.TrimSpace(a[7:])
	} else if a != "" {
		creds.Bearer = a // an unsupported scheme still counts as a presented credential
	}
	creds.Remote, _ = netip.ParseAddrPort(r.RemoteAddr)
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		creds.ClientCert = r.TLS.VerifiedChains[0][0]
	}
	return creds
}

// Latest returns the later of a and b.
func Latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// RequestOrigin returns the scheme (https when the connection is TLS) and Host the request
// addressed the boundary with, as scheme://host. Forwarding headers are not trusted.
func RequestOrigin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// WriteResponse writes a JSON-RPC response body — out is its JSON — in enc, or 204 when
// there is none (notifications). log hears of a response MessagePack cannot carry.
func WriteResponse(w http.ResponseWriter, log *slog.Logger, out []byte, enc Encoding, traceID string) {
	if len(out) == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	out, ok := enc.FromJSON(out, traceID)
	if !ok {
		log.Error("a response has no MessagePack form", "trace_id", traceID)
	}
	// Both values in one allocation: the keys are canonical already, and net/http copies
	// the header when it writes it.
	vals := &[2]string{enc.ContentType(), strconv.Itoa(len(out))}
	h := w.Header()
	h["Content-Type"], h["Content-Length"] = vals[0:1:1], vals[1:2:2]
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}
