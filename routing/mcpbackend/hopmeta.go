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

// withHopMeta returns a request's params with params._meta[MetaKeyAuthorization] set to
// "Bearer <bearer>", or removed when bearer is empty; the rest of _meta (progressToken,
// the 2026-07-28 request metadata) is kept. params are what mcp-go hands the transport: a
// typed params struct, or on 2026-07-28 the map of members it builds. Params without the
// member are returned as they are when there is nothing to set. The params of the calls
// the bridge forwards (tools/call, resources/read, prompts/get) are handled as the typed
// structs they are; any other params through their JSON. mcp-go encodes _meta from Go
// maps, so in JSON the member's name appears exactly as metaKeyJSON when present.
func withHopMeta(params any, bearer string) (any, error) {
	if meta, ok := typedMeta(params); ok {
		if bearer == "" && !hasHopMember(meta) {
			return params, nil
		}
		return withTypedMeta(params, hopMetaOf(meta, bearer)), nil
	}
	fields, isMap := params.(map[string]json.RawMessage)
	if isMap {
		if bearer == "" && !bytes.Contains(fields["_meta"], metaKeyJSON) {
			return params, nil
		}
		fields = maps.Clone(fields)
	} else {
		if params == nil && bearer == "" {
			return nil, nil
		}
		raw, err := json.Marshal(params)
		if err != nil {
			return nil, fmt.Errorf("encoding request params: %w", err)
		}
		if bearer == "" && !bytes.Contains(raw, metaKeyJSON) {
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
	if bearer != "" {
		if meta[MetaKeyAuthorization], err = json.Marshal("Bearer " + bearer); err != nil {
			return nil, fmt.Errorf("encoding the hop credential: %w", err)
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

// hopMetaOf returns a copy of meta with its MetaKeyAuthorization member set to "Bearer
// <bearer>", or removed when bearer is empty; nil when nothing is left.
func hopMetaOf(meta *mcp.Meta, bearer string) *mcp.Meta {
	out := &mcp.Meta{}
	if meta != nil {
		out.ProgressToken = meta.ProgressToken
		out.AdditionalFields = maps.Clone(meta.AdditionalFields)
	}
	delete(out.AdditionalFields, MetaKeyAuthorization)
	if bearer != "" {
		if out.AdditionalFields == nil {
			out.AdditionalFields = map[string]any{}
		}
		out.AdditionalFields[MetaKeyAuthorization] = "Bearer " + bearer
	}
	if out.ProgressToken == nil && len(out.AdditionalFields) == 0 {
		return nil
	}
	return out
}
