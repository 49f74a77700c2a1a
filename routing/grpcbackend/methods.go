package grpcbackend

import (
	"encoding/json"
	"sort"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// Method is one RPC as the backend exposes it: the JSON-RPC method name and the RPC's
// descriptor.
type Method struct {
	// Name is the JSON-RPC method name (an explicit name, or a service prefix and the RPC's
	// name after the service's naming rule).
	Name string
	// Descriptor is the RPC's descriptor; its Input and Output are the request and response
	// messages.
	Descriptor protoreflect.MethodDescriptor
	// Unwrap is the proto name of the response field returned alone as the JSON-RPC result,
	// or empty when the whole response is.
	Unwrap string
}

// Methods returns the methods mapped to b, sorted by name: the explicit ones and every
// method of each exposed service. It is nil until the descriptors have loaded (Loaded).
func (b *Backend) Methods() []Method {
	r := b.state.Load()
	if r == nil {
		return nil
	}
	out := make([]Method, 0, len(r.methods))
	for name, m := range r.methods {
		out = append(out, Method{Name: name, Descriptor: m.desc, Unwrap: m.codec.unwrap})
	}
	for _, s := range r.services {
		for name, m := range s.byName {
			out = append(out, Method{Name: name, Descriptor: m.desc, Unwrap: m.codec.unwrap})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// InputSchema returns the JSON Schema of the method's params: the request message as
// protojson reads it (MessageSchema).
func (m Method) InputSchema() json.RawMessage { return MessageSchema(m.Descriptor.Input()) }

// OutputSchema returns the JSON Schema of the method's result: the response message, or
// the schema of its Unwrap field; for a server-streaming method, an array of those, as
// the stream's messages are collected for a caller that takes the result whole.
func (m Method) OutputSchema() json.RawMessage {
	out := m.Descriptor.Output()
	var unwrap protoreflect.FieldDescriptor
	if m.Unwrap != "" {
		unwrap = out.Fields().ByName(protoreflect.Name(m.Unwrap))
	}
	streaming := m.Descriptor.IsStreamingServer()
	switch {
	case unwrap != nil && !streaming:
		return FieldSchema(unwrap)
	case !streaming:
		return MessageSchema(out)
	}
	g := newSchemaGen("")
	var item *node
	if unwrap != nil {
		if fm := fieldMessage(unwrap); fm != nil {
			g.findRecursive(fm)
		}
		item = g.field(unwrap)
	} else {
		g.findRecursive(out)
		item = g.messageRef(out, false)
	}
	return g.finish((&node{}).set("type", "array").set("items", item))
}
