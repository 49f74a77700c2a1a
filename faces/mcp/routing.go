package mcpface

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// The routing headers of MCP 2026-07-28: Mcp-Method mirrors the JSON-RPC method and
// Mcp-Name the name the method acts on, so that an intermediary can route a request
// without parsing its body. The body stays the source of truth: the face checks every
// POST that declares 2026-07-28 (or carries either header, in any revision) against its
// body before anything else reads the request — the session checks, the tools/call fast
// path, mcp-go's server, the policy — and refuses a disagreement with a RoutingHeaderError.
// What the face decides from the headers afterwards (fastcall.go) is therefore what the
// body says.

// Header names, as net/http canonicalizes them.
const (
	headerMethod  = mcp.HeaderMethod          // "Mcp-Method"
	headerName    = mcp.HeaderName            // "Mcp-Name"
	headerVersion = mcp.HeaderProtocolVersion // "Mcp-Protocol-Version"
)

// The codes of RoutingHeaderError: MCP's HeaderMismatch, and JSON-RPC's Invalid Request.
const (
	codeHeaderMismatch schemas.Code = mcp.HEADER_MISMATCH
	codeInvalidRequest schemas.Code = mcp.INVALID_REQUEST
)

// uriMember is the params member a resource method's Mcp-Name mirrors.
const uriMember = "uri"

// RoutingHeaderError is why a POST to /mcp was refused before anything routed it: its
// routing headers disagree with its body, or its body cannot be checked against them. It
// is answered with HTTP 400 and a JSON-RPC error of code Code.
type RoutingHeaderError struct {
	// Code is -32020 (HeaderMismatch: a routing header is missing, repeated, malformed, sent
	// for a method that has no name, or differs from the body) or -32600 (Invalid Request: a
	// batch, a repeated member name, a body that is not one JSON-RPC request), or the code
	// of another decoding failure of the body (-32700, -32602).
	Code schemas.Code
	// Header names the header at fault; "" when the body is.
	Header string
	// Reason says what is wrong without echoing the request.
	Reason string
}

// Error implements error.
func (e *RoutingHeaderError) Error() string {
	if e.Header == "" {
		return e.Reason
	}
	return e.Header + " header: " + e.Reason
}

// routed is what the checked headers and body say of a request.
type routed struct {
	verified bool   // Mcp-Method was sent and agrees with the body
	method   string // the body's method
	name     string // the body's name for the method (Mcp-Name), when it has one
	hasName  bool
}

// nameMember is the params member a method's Mcp-Name mirrors, "" for a method that has
// none; required reports whether a 2026-07-28 request must send Mcp-Name for it (the
// methods every SDK sets it on). For the others the header is optional, but must agree.
func nameMember(method string) (member string, required bool) {
	switch method {
	case string(mcp.MethodToolsCall), string(mcp.MethodPromptsGet):
		return "name", true
	case string(mcp.MethodResourcesRead):
		return uriMember, true
	case string(mcp.MethodResourcesSubscribe), string(mcp.MethodResourcesUnsubscribe):
		return uriMember, false
	case "tasks/get", "tasks/update", "tasks/cancel":
		return "taskId", false
	}
	return "", false
}

// headerValues returns every value of the header name in h, under any spelling of the
// name: a case variant sent beside the canonical one is the same header sent twice.
func headerValues(h http.Header, name string) []string {
	vs := h[name]
	for k, more := range h {
		if k != name && strings.EqualFold(k, name) {
			vs = append(slices.Clip(vs), more...)
		}
	}
	return vs
}

// base64 sentinel of a header value that is not plain ASCII (SEP-2243).
const (
	b64Prefix = "=?base64?"
	b64Suffix = "?="
)

// decodeHeaderValue decodes a routing header value that may be base64-wrapped.
func decodeHeaderValue(v string) (string, bool) {
	inner, ok := strings.CutPrefix(v, b64Prefix)
	if !ok {
		return v, true
	}
	inner, ok = strings.CutSuffix(inner, b64Suffix)
	if !ok {
		return "", false
	}
	b, err := base64.StdEncoding.DecodeString(inner)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// checkRouting checks the routing headers of a POST with header h and body against the
// body. Requests of earlier revisions that carry neither header are not read (ok, and the
// zero routing). id is the request's id, for the error response.
func checkRouting(h http.Header, body []byte, lim jsonrpc.Limits) (rt routed, id jsonrpc.ID, err *RoutingHeaderError) {
	methods, names := headerValues(h, headerMethod), headerValues(h, headerName)
	versions := headerValues(h, headerVersion)
	modern := false
	for _, v := range versions {
		modern = modern || mcp.IsModernProtocol(v)
	}
	if !modern && len(methods) == 0 && len(names) == 0 && !bytes.Contains(body, []byte(mcp.MetaKeyProtocolVersion)) {
		return rt, id, nil
	}
	p, derr := jsonrpc.Decode(body, lim)
	switch {
	case derr != nil:
		if !modern && len(methods) == 0 && len(names) == 0 {
			return rt, id, nil // not a 2026-07-28 request after all: mcp-go answers it
		}
		return rt, id, &RoutingHeaderError{Code: derr.Code, Reason: derr.Reason}
	case p.Batch:
		return rt, id, &RoutingHeaderError{Code: codeInvalidRequest, Reason: "a batch is not a request of protocol 2026-07-28, and has no routing headers"}
	case p.Members[0].Err != nil:
		e := p.Members[0].Err
		return rt, e.ID, &RoutingHeaderError{Code: e.Code, Reason: e.Reason}
	}
	req := &p.Members[0].Request
	id = req.ID
	// encoding/json, which mcp-go decodes with, matches member names without regard to
	// case and keeps the last of those that match: a second spelling of a member would be
	// read by mcp-go and not by the check.
	if folded(body, "jsonrpc", "method", "id", "params") {
		return rt, id, &RoutingHeaderError{Code: codeInvalidRequest, Reason: "a member name repeated in another case"}
	}
	member, required := nameMember(req.Method)
	var bodyName string
	var hasName, badName bool
	if len(req.Params) > 0 && req.Params[0] == '{' {
		if folded(req.Params, member, "arguments", "_meta", "cursor") {
			return rt, id, &RoutingHeaderError{Code: codeInvalidRequest, Reason: "a member name of params repeated in another case"}
		}
		eachMember(req.Params, func(key, val []byte) bool {
			switch k := memberName(key); {
			case member != "" && k == member:
				hasName = val[0] == '"' && json.Unmarshal(val, &bodyName) == nil
				badName = !hasName
			case k == "_meta" && !modern && val[0] == '{':
				eachMember(val, func(key, val []byte) bool {
					var v string
					if memberName(key) == mcp.MetaKeyProtocolVersion && json.Unmarshal(val, &v) == nil {
						modern = mcp.IsModernProtocol(v)
					}
					return true
				})
			}
			return true
		})
	}
	if !modern && len(methods) == 0 && len(names) == 0 {
		return rt, id, nil
	}
	switch {
	case len(methods) > 1:
		return rt, id, mismatch(headerMethod, "sent more than once")
	case len(names) > 1:
		return rt, id, mismatch(headerName, "sent more than once")
	case modern && len(versions) > 1:
		return rt, id, mismatch(headerVersion, "sent more than once")
	case len(methods) == 0 && modern:
		return rt, id, mismatch(headerMethod, "missing; protocol 2026-07-28 requires it")
	case len(methods) == 0:
		return rt, id, mismatch(headerName, "sent without "+headerMethod)
	case methods[0] != req.Method:
		return rt, id, mismatch(headerMethod, "does not match the body's method")
	case len(names) == 1 && member == "":
		return rt, id, mismatch(headerName, "sent for a method that has no name")
	case len(names) == 1:
		v, ok := decodeHeaderValue(names[0])
		switch {
		case !ok:
			return rt, id, mismatch(headerName, "invalid base64 encoding")
		case badName || !hasName:
			return rt, id, mismatch(headerName, "the body has no string params."+member)
		case v != bodyName:
			return rt, id, mismatch(headerName, "does not match params."+member)
		}
	case modern && required && hasName:
		return rt, id, mismatch(headerName, "missing; protocol 2026-07-28 requires it for "+req.Method)
	}
	return routed{verified: true, method: req.Method, name: bodyName, hasName: hasName}, id, nil
}

func mismatch(header, reason string) *RoutingHeaderError {
	return &RoutingHeaderError{Code: codeHeaderMismatch, Header: header, Reason: reason}
}

// folded reports whether obj, a well-formed JSON object, has a member whose name equals
// one of names under Unicode case folding without being spelled exactly as it is.
func folded(obj []byte, names ...string) bool {
	if len(obj) == 0 || obj[0] != '{' {
		return false
	}
	found := false
	eachMember(obj, func(key, _ []byte) bool {
		k := memberName(key)
		for _, n := range names {
			if n != "" && k != n && strings.EqualFold(k, n) {
				found = true
			}
		}
		return !found
	})
	return found
}

// memberName is the decoded name of a member whose raw name (quotes included) is key.
func memberName(key []byte) string {
	if bytes.IndexByte(key, '\\') < 0 {
		return string(key[1 : len(key)-1])
	}
	var s string
	_ = json.Unmarshal(key, &s)
	return s
}

// writeRoutingError answers a request refused by checkRouting: HTTP 400, as mcp-go
// answers its own header mismatches, with the JSON-RPC error.
func writeRoutingError(w http.ResponseWriter, id jsonrpc.ID, e *RoutingHeaderError) {
	body := jsonrpc.AppendError(nil, id, e.Code, e.Error(), nil)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(append(body, '\n')) //nolint:gosec // a JSON envelope encoded here, served as application/json with nosniff
}
