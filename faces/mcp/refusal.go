package mcpface

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"strconv"

	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// mcp-go turns any error a tool handler returns into a JSON-RPC internal error (-32603)
// whose message is the error's text. The MCP face does better for calls the pipeline
// refused: the tool handler records the refusal on the request (faceRequest.refusal), and
// refusalWriter, between mcp-go and the connection, holds the JSON response mcp-go writes
// for it and writes the gateway's own error in its place — its code, message and data
// (missing_scopes, retry_after_ms, trace_id …). A refusal for insufficient scope is
// answered as the MCP authorization spec's step-up challenge: 403 with
// WWW-Authenticate: Bearer error="insufficient_scope", scope="…", resource_metadata="…",
// so an MCP client can ask its user for a token with those scopes. Responses mcp-go
// streams as SSE pass through untouched: their status is already sent.

// mcpRefusal is a call the pipeline refused on the MCP face.
type mcpRefusal struct {
	err     *gateway.Error
	traceID string
}

// refusalWriter is the ResponseWriter mcp-go writes a POST's response to.
type refusalWriter struct {
	http.ResponseWriter
	fr     *faceRequest
	held   bool
	status int
	body   bytes.Buffer
}

// WriteHeader holds a JSON response to a refused call; anything else passes.
func (w *refusalWriter) WriteHeader(status int) {
	if w.fr.refusal.Load() != nil && faces.IsJSON(w.Header().Get("Content-Type")) {
		w.held, w.status = true, status
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *refusalWriter) Write(b []byte) (int, error) {
	if w.held {
		return w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

// Flush implements http.Flusher, which mcp-go needs to stream SSE.
func (w *refusalWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && !w.held {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *refusalWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes a held response: the refusal as the gateway's JSON-RPC error for the
// request's id, or, should mcp-go's response not be the error of one request, as it was.
func (w *refusalWriter) finish(resourceMetadata string) {
	if !w.held {
		return
	}
	var resp struct {
		ID    json.RawMessage `json:"id"`
		Error json.RawMessage `json:"error"`
	}
	r := w.fr.refusal.Load()
	err := json.Unmarshal(w.body.Bytes(), &resp)
	if err != nil || resp.Error == nil || len(resp.ID) == 0 || !writeRefusal(w.ResponseWriter, resp.ID, r, w.status, resourceMetadata) {
		w.ResponseWriter.WriteHeader(w.status)
		_, _ = w.ResponseWriter.Write(w.body.Bytes())
	}
}

// writeRefusal writes the refusal r of the request with the given id as the gateway's
// JSON-RPC error, with status (403 and a step-up challenge for insufficient scope). It
// writes nothing and returns false when the error does not encode.
func writeRefusal(w http.ResponseWriter, id json.RawMessage, r *mcpRefusal, status int, resourceMetadata string) bool {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": errorObject(r.err, r.traceID)})
	if err != nil {
		return false
	}
	h := w.Header()
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Trace-Id", r.traceID)
	if r.err.Code() == schemas.CodeInsufficientScope {
		status = http.StatusForbidden
		h.Set("WWW-Authenticate", faces.ScopeChallenge(scopesOf(r.err.Data()["missing_scopes"]), resourceMetadata))
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
	return true
}

// errorObject is the JSON-RPC error object of err, with the trace id in its data.
func errorObject(err *gateway.Error, traceID string) map[string]any {
	data := map[string]any{"trace_id": traceID}
	maps.Copy(data, err.Data())
	return map[string]any{"code": int(err.Code()), "message": err.Message(), "data": data}
}

// scopesOf returns the scope names of a missing_scopes value.
func scopesOf(v any) []string {
	switch s := v.(type) {
	case []string:
		return s
	case []any:
		out := make([]string, 0, len(s))
		for _, x := range s {
			if name, ok := x.(string); ok {
				out = append(out, name)
			}
		}
		return out
	}
	return nil
}
