package grpcface

import (
	"encoding/json"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	nektev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/nekte/v1"
)

// TestDelegateEventMapping maps every event of a delegate stream to its DelegateEvent
// member.
func TestDelegateEventMapping(t *testing.T) {
	tests := []struct {
		msg, want string
	}{
		{`{"event":"progress","data":{"processed":2,"total":5,"message":"two"}}`, `{"progress":{"processed":2,"total":5,"message":"two"}}`},
		{`{"event":"partial","data":{"out":{"rows":[1]},"resolved_level":"compact"}}`, `{"partial":{"output":{"rows":[1]},"resolved_level":"compact"}}`},
		{`{"event":"partial","data":{"out":null}}`, `{"partial":{"output":null}}`},
		{`{"event":"complete","data":{"task_id":"t","status":"completed","out":{"minimal":"ok","compact":{"a":1},"full":{"a":1,"b":2}},"meta":{"ms":4,"tokens_used":9}}}`,
			`{"complete":{"task_id":"t","output":{"minimal":"ok","compact":{"a":1},"full":{"a":1,"b":2}},"meta":{"tokens_used":"X"}}}`},
		{`{"event":"complete","data":{"task_id":"t","status":"completed","out":{}}}`, `{"complete":{"task_id":"t","output":{}}}`},
		{`{"event":"error","data":{"task_id":"t","code":-32006,"message":"Task timed out"}}`, `{"error":{"task_id":"t","code":-32006,"message":"Task timed out"}}`},
		{`{"event":"cancelled","data":{"task_id":"t","reason":"r","previous_status":"suspended"}}`, `{"cancelled":{"task_id":"t","reason":"r","previous_status":"suspended"}}`},
		{`{"event":"suspended","data":{"task_id":"t","checkpoint_available":true}}`, `{"suspended":{"task_id":"t","checkpoint_available":true}}`},
		{`{"event":"resumed","data":{"task_id":"t","from_checkpoint":false}}`, `{"resumed":{"task_id":"t"}}`},
		{`{"event":"status_change","data":{"task_id":"t","from":"accepted","to":"running","reason":"go"}}`,
			`{"status_change":{"task_id":"t","from_status":"accepted","to_status":"running","reason":"go"}}`},
		{`{"event":"progress","data":{"processed":3000000000,"total":1}}`, `{"progress":{"processed":2147483647,"total":1}}`},
	}
	for _, tt := range tests {
		t.Run(tt.msg, func(t *testing.T) {
			ev, err := delegateEvent([]byte(tt.msg))
			if err != nil {
				t.Fatal(err)
			}
			checkProto(t, ev, tt.want)
			if m := ev.GetComplete().GetMeta(); m != nil && (m.GetMs() != 4 || m.GetTokensUsed() != 9) {
				t.Errorf("meta %v, want ms 4 and tokens_used 9", m)
			}
		})
	}
	if ev, err := delegateEvent([]byte(`{"event":"heartbeat","data":{}}`)); ev != nil || err != nil {
		t.Errorf("an event with no member: %v %v, want it skipped", ev, err)
	}
	for _, bad := range []string{`{"event":"progress","data":{"processed":"x"}}`, `{"data":{}}`, `not json`} {
		if _, err := delegateEvent([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestDiscoverFilterParams: zero fields are left out, an empty filter is no filter, and a
// float32 threshold keeps the digits it was written with.
func TestDiscoverFilterParams(t *testing.T) {
	tests := []struct {
		filter *nektev1.DiscoverFilter
		want   string
	}{
		{nil, `{"level":1}`},
		{&nektev1.DiscoverFilter{}, `{"level":1}`},
		{&nektev1.DiscoverFilter{Category: "demo"}, `{"level":1,"filter":{"category":"demo"}}`},
		{&nektev1.DiscoverFilter{Query: "sum", TopK: 3, Threshold: 0.3}, `{"level":1,"filter":{"query":"sum","top_k":3,"threshold":0.3}}`},
		{&nektev1.DiscoverFilter{Id: "sum", Threshold: 0.05}, `{"level":1,"filter":{"id":"sum","threshold":0.05}}`},
	}
	for _, tt := range tests {
		got, err := json.Marshal(discoverParams{Level: 1, Filter: discoverFilter(tt.filter)})
		if err != nil || string(got) != tt.want {
			t.Errorf("%v: %s %v, want %s", tt.filter, got, err, tt.want)
		}
	}
}

// renderProto writes a message as canonical JSON named as in the .proto, set fields only, with
// bytes fields holding UTF-8 JSON inlined and the values of volatileMembers members (hashes,
// timings, timestamps, signatures) replaced by "X".
func renderProto(t *testing.T, m proto.Message) string {
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

func checkProto(t *testing.T, got proto.Message, want string) {
	t.Helper()
	if g, w := renderProto(t, got), scrubbedJSON(t, want); g != w {
		t.Errorf("got  %s\nwant %s", g, w)
	}
}
