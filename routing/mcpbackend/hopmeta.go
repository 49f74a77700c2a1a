package mcpbackend

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/mark3labs/mcp-go/mcp"
)

// MetaKeyAuthorization is the params._meta member that carries a call's hop credential to
// a stdio upstream, which has no HTTP headers: "Bearer <token>", as an Authorization header
// would. The bridge owns the member: a value for it from anywhere else is removed before a
// request leaves, on every transport, and only the bridge's own value goes to a stdio
// upstream.
const MetaKeyAuthorization = "gatehouse.dev/authorization"

// metaKeyJSON is the member name as encoding/json writes it.
var metaKeyJSON = []byte(`"` + MetaKeyAuthorization + `"`)

// The params._meta members that carry a traced call's W3C trace context to a stdio
// upstream, which has no HTTP headers (over HTTP they are the traceparent and tracestate
// headers: upstream.hopHeaders).
const (
	MetaKeyTraceparent = "traceparent"
	MetaKeyTracestate  = "tracestate"
)

// hopMeta is what the bridge settles in the params._meta of a request to a stdio
// upstream: the hop credential — the bridge owns the member, so an empty bearer removes
// any value — and the trace context of the call's client span, set when the call is
// traced (traceparent not empty) and left alone otherwise.
type hopMeta struct {
	bearer                  string
	traceparent, tracestate string
}

// setsNothing reports whether h has nothing to set (it may still remove a credential).
func (h hopMeta) setsNothing() bool { return h.bearer == "" && h.traceparent == "" }

// apply settles h in the members of a _meta object.
func (h hopMeta) apply(meta map[string]any) {
	delete(meta, MetaKeyAuthorization)
	if h.bearer != "" {
		meta[MetaKeyAuthorization] = "Bearer " + h.bearer
	}
	if h.traceparent != "" {
		meta[MetaKeyTraceparent] = h.traceparent
		delete(meta, MetaKeyTracestate)
		if h.tracestate != "" {
			meta[MetaKeyTracestate] = h.tracestate
		}
	}
}

// withHopMeta returns a request's params with params._meta[MetaKeyAuthorization] set to
// "Bearer <h.bearer>", or removed when h.bearer is empty, and the trace context of h set
// when it has one; the rest of _meta (progressToken, the 2026-07-28 request metadata) is
// kept. params are what mcp-go hands the transport: a
// typed params struct, or on 2026-07-28 the map of members it builds. Params without the
// member are returned as they are when there is nothing to set. The params of the calls
// the bridge forwards (tools/call, resources/read, prompts/get) are handled as the typed
// structs they are; any other params through their JSON. mcp-go encodes _meta from Go
// maps, so in JSON the member's name appears exactly as metaKeyJSON when present.
func withHopMeta(params any, h hopMeta) (any, error) {
	if meta, ok := typedMeta(params); ok {
		if h.setsNothing() && !hasHopMember(meta) {
			return params, nil
		}
		return withTypedMeta(params, hopMetaOf(meta, h)), nil
	}
	fields, isMap := params.(map[string]json.RawMessage)
	if isMap {
		if h.setsNothing() && !bytes.Contains(fields["_meta"], metaKeyJSON) {
			return params, nil
		}
		fields = maps.Clone(fields)
	} else {
		if params == nil && h.setsNothing() {
			return nil, nil
		}
		raw, err := json.Marshal(params)
		if err != nil {
			return nil, fmt.Errorf("encoding request params: %w", err)
		}
		if h.setsNothing() && !bytes.Contains(raw, metaKeyJSON) {
			return params, nil
		}
		if fields, err = objectMembers(raw); err != nil {
			return nil, errors.New("request params are not a JSON object, so they cannot carry _meta")
		}
	}
	meta, err := objectMembers(fields["_meta"])
	if err != nil {
		return nil, errors.New("request params._meta is not a JSON object")
	}
	delete(meta, MetaKeyAuthorization)
	set := map[string]any{}
	h.apply(set)
	if h.traceparent != "" {
		delete(meta, MetaKeyTracestate)
	}
	for k, v := range set {
		if meta[k], err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("encoding request params._meta: %w", err)
		}
	}
	if len(meta) == 0 {
		delete(fields, "_meta")
		return fields, nil
	}
	if fields["_meta"], err = json.Marshal(meta); err != nil {
		return nil, fmt.Errorf("encoding request params._meta: %w", err)
	}
	return fields, nil
}

// objectMembers decodes a JSON object's members; absent or null is an empty object.
func objectMembers(raw json.RawMessage) (map[string]json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if len(raw) == 0 || string(raw) == "null" {
		return m, nil
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if m == nil { // the literal null with surrounding space
		m = map[string]json.RawMessage{}
	}
	return m, nil
}

// typedMeta returns the _meta of the params types the bridge sends for calls; ok is false
// for any other type.
func typedMeta(params any) (meta *mcp.Meta, ok bool) {
	switch p := params.(type) {
	case mcp.CallToolParams:
		return p.Meta, true
	case mcp.ReadResourceParams:
		return p.Meta, true
	case mcp.GetPromptParams:
		return p.Meta, true
	}
	return nil, false
}

// withTypedMeta returns a copy of params, of a type typedMeta accepts, with _meta meta.
func withTypedMeta(params any, meta *mcp.Meta) any {
	switch p := params.(type) {
	case mcp.CallToolParams:
		p.Meta = meta
		return p
	case mcp.ReadResourceParams:
		p.Meta = meta
		return p
	case mcp.GetPromptParams:
		p.Meta = meta
		return p
	}
	return params
}

// hasHopMember reports whether meta has a MetaKeyAuthorization member.
func hasHopMember(meta *mcp.Meta) bool {
	if meta == nil {
		return false
	}
	_, ok := meta.AdditionalFields[MetaKeyAuthorization]
	return ok
}

// hopMetaOf returns a copy of meta with h settled in it (hopMeta); nil when nothing is
// left.
func hopMetaOf(meta *mcp.Meta, h hopMeta) *mcp.Meta {
	out := &mcp.Meta{}
	if meta != nil {
		out.ProgressToken = meta.ProgressToken
		out.AdditionalFields = maps.Clone(meta.AdditionalFields)
	}
	if out.AdditionalFields == nil {
		out.AdditionalFields = map[string]any{}
	}
	h.apply(out.AdditionalFields)
	if out.ProgressToken == nil && len(out.AdditionalFields) == 0 {
		return nil
	}
	return out
}
