// Package transcode converts JSON-RPC params to protobuf wire bytes, and protobuf wire
// bytes to JSON results, directly: a Plan compiled once per message type reads JSON in one
// pass and appends wire bytes, or reads wire bytes and appends JSON, without building a
// dynamicpb message, a map[string]any or any other intermediate value, and without
// reflection on the hot path.
//
// # API
//
//	plan, err := transcode.Compile(md, transcode.Options{Resolver: types}) // or Cache.Plan(md)
//	wire, err := plan.EncodeJSON(buf[:0], params)        // params object → wire
//	wire, err := plan.EncodePositional(buf[:0], params)  // params array → wire, fields in number order
//	js, err := plan.DecodeWire(out[:0], wire)            // wire → JSON object
//	js, err := plan.DecodeField(out[:0], wire, "result") // wire → the JSON of one field
//
// All four append to their first argument and return it unchanged on error; errors are
// *PathError values naming where in the document (or in the message, for wire errors) the
// problem is, without repeating the offending value. A Plan is immutable and safe for
// concurrent use; its scratch state is pooled, so a call that appends to a buffer with room
// allocates nothing, except around google.protobuf.Any (the type URL is resolved as a
// string), for timestamps with a UTC offset (time.Parse), for maps of more than 16 keys
// (the duplicate check uses a Go map) and for messages that occur more than once on the
// wire (merged in a new buffer).
//
// # Semantics
//
// Plans implement the proto3 JSON mapping as google.golang.org/protobuf/encoding/protojson
// does, to the letter, and are tested differentially against it:
//
//   - EncodeJSON accepts exactly the documents protojson.Unmarshal accepts, the quirks of
//     its tokenizer included, and writes bytes that proto.Unmarshal reads back into a
//     message proto.Equal to the one protojson builds. Inside google.protobuf.Any it writes
//     the embedded message in deterministic proto.Marshal order (fields outside oneofs by
//     number, then oneof members; map entries by key), so the Any bytes are equal too.
//     Elsewhere fields are written in document order, and zero values of fields without
//     presence are left out.
//   - DecodeWire writes the JSON value protojson.Marshal writes after proto.Unmarshal: names
//     in lowerCamel, members in declaration order (protojson's order, which is field-number
//     order when fields are declared in number order), map keys sorted, 64-bit integers as
//     strings, bytes in standard base64, with the options' EmitUnpopulated. It fails exactly
//     where either of them fails, and skips unknown fields and fields with an unexpected
//     wire type as proto.Unmarshal does. Only whitespace differs: protojson randomizes it.
//
// Deliberate differences from protojson, besides the wording of errors:
//
//   - Extensions are not resolved: "[pkg.ext]" members are unknown fields, and extensions
//     on the wire are skipped like any unknown field.
//   - The nesting limit (10,000 messages, protojson's and proto's default) also counts the
//     messages inside a google.protobuf.Any on the wire, where protojson.Marshal starts a
//     fresh count; a message nested that deep through Anys is refused, not recursed into.
//   - DecodeField checks the wire encoding of the fields it does not write, but not what
//     only their JSON form would refuse (a Timestamp out of range, a Value with no kind).
//   - For a map entry whose key occurs with its wire type and again with another,
//     proto.Unmarshal panics on dynamic messages; DecodeWire keeps the well-typed key.
//
// It imports nothing of Gatehouse: the gRPC targets compile its plans from descriptors.
package transcode
