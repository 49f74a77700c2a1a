// Package prototest compares protobuf messages in tests as canonical JSON named as in the
// .proto, with volatile members (hashes, timings, timestamps, signatures) masked, so a test
// states the message it expects as one readable line.
package prototest

import (
	"encoding/json"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Render writes a message as canonical JSON named as in the .proto, set fields only, with
// bytes fields holding UTF-8 JSON inlined and the values of volatileMembers members (hashes,
// timings, timestamps, signatures) replaced by "X".
func Render(t *testing.T, m proto.Message) string {
	t.Helper()
	raw, err := json.Marshal(renderMessage(m.ProtoReflect()))
	if err != nil {
		t.Fatal(err)
	}
	return scrubbedJSON(t, string(raw))
}

func renderMessage(m protoreflect.Message) map[string]any {
	out := map[string]any{}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.IsList() {
			items := make([]any, v.List().Len())
			for i := range items {
				items[i] = renderValue(fd, v.List().Get(i))
			}
			out[string(fd.Name())] = items
		} else {
			out[string(fd.Name())] = renderValue(fd, v)
		}
		return true
	})
	return out
}

func renderValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	switch fd.Kind() {
	case protoreflect.MessageKind:
		return renderMessage(v.Message())
	case protoreflect.BytesKind:
		if json.Valid(v.Bytes()) {
			return json.RawMessage(v.Bytes())
		}
		return v.Bytes()
	default:
		return v.Interface()
	}
}

// volatileMembers are the members whose values renderProto replaces; the value false
// marks those it leaves out, as they may be zero and so absent (timings, learned costs).
var volatileMembers = map[string]bool{
	"h": true, "current_hash": true, "hash": true, "input_sha256": true, "output_sha256": true, "receipt": true, "kid": true,
	"tokens_used": true, "created_at": true, "updated_at": true, "completed_at": true,
	"ms": false, "cost": false,
}

// scrubbedJSON rewrites JSON with sorted members, volatileMembers values replaced.
func scrubbedJSON(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON: %s: %v", s, err)
	}
	b, err := json.Marshal(scrubVolatile(v))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func scrubVolatile(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			keep, ok := volatileMembers[k]
			switch {
			case !ok:
				v[k] = scrubVolatile(x)
			case keep:
				v[k] = "X"
			default:
				delete(v, k)
			}
		}
	case []any:
		for i := range v {
			v[i] = scrubVolatile(v[i])
		}
	}
	return v
}

func Check(t *testing.T, got proto.Message, want string) {
	t.Helper()
	if g, w := Render(t, got), scrubbedJSON(t, want); g != w {
		t.Errorf("got  %s\nwant %s", g, w)
	}
}
