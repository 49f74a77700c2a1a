// Package openrpc writes the gateway's OpenRPC 1.3.2 document (https://spec.open-rpc.org):
// the answer of rpc.discover, the specification's service discovery method, and of GET
// /openrpc.json on the boundary. It is generated from the capability catalog (every gRPC
// method, MCP tool, agent operator and demo method a configuration routes) and from the
// built-in methods the server adds (the nekte.* methods, and any other routed method,
// described by name only), as one caller sees them: a method the caller's view hides is
// not in its document.
//
// # Methods
//
// Each method has its name (the JSON-RPC method), a summary (the first sentence of its
// description) and description, a tag naming its catalog category, its params and result
// and the errors it can answer. An input schema that is an object ("type": "object", or
// "properties" without a type) becomes paramStructure "by-name" with one content
// descriptor per top-level property, required when the schema's "required" lists it. Any
// other input schema (an array, a union, anything) becomes one descriptor named "params"
// standing for the whole params value, and paramStructure is left at "either". The result
// is one descriptor named "result" with the output schema ({} when the source declares
// none; a streamed gRPC result is the array of its messages). A schema that refers to
// itself or to its $defs is kept whole under components.schemas ("<method>.params",
// "<method>.result") and its references are rewritten to point there, so that the
// descriptors cut from it still resolve inside the document.
//
// # Errors
//
// components.errors holds one error object per error kind a listed method can answer,
// keyed by the kind's name in schemas/errcodes.go (INVALID_PARAMS, RATE_LIMITED, …), and
// every method refers to its errors there: the gateway-wide ones the configuration's
// stages can answer (Params.Common), then those of its kind (TOOL_FAILED for an MCP tool,
// the agent codes for an agent operator, the NEKTE codes of each nekte.* method).
//
// # Cache
//
// A Generator keeps the documents it wrote by catalog version and by the set of methods
// the caller sees (a hash of the hidden names), at most Params.CacheSize of them (openrpc.cache_size); a
// catalog change empties it. A repeated rpc.discover costs one visibility decision per
// method and a map lookup.
package openrpc
