package msgpack_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"

	vmsgpack "github.com/vmihailenco/msgpack/v5"

	"github.com/gatehouse-dev/gatehouse/codecs/msgpack"
)

// deepLimits lets ToJSON read back anything FromJSON writes (encoding/json accepts up to
// 10000 levels of nesting).
var deepLimits = msgpack.Limits{MaxDepth: 10001}

func FuzzToJSON(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	// MessagePack of real frames: FromJSON of every JSON frame.
	for _, b := range fuzzseed.Frames(f, append(fuzzseed.Requests, fuzzseed.Responses...)...) {
		if m, err := msgpack.FromJSON(b); err == nil {
			f.Add(m)
		}
	}
	for _, tt := range toJSONCases {
		f.Add(mp(f, tt.in))
	}
	for _, s := range []string{"81 01 02", "c1", "dd ffffffff", "d7 ff ffffffff 00000000", "a2 c328"} {
		f.Add(mp(f, s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := msgpack.ToJSON(in, msgpack.Limits{MaxDepth: 32, MaxStringBytes: 1 << 16})
		if err != nil {
			if _, ok := errors.AsType[*msgpack.Error](err); !ok {
				t.Fatalf("ToJSON(% x) error %T is not an *Error", in, err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("ToJSON(% x) = %q: not JSON", in, out)
		}
		// An independent decoder reads the document too.
		var v any
		if err := vmsgpack.Unmarshal(in, &v); err != nil {
			t.Fatalf("ToJSON(% x) accepted what vmihailenco/msgpack rejects: %v", in, err)
		}
		// ToJSON's output is a fixed point of the round trip through MessagePack.
		back, err := msgpack.FromJSON(out)
		if err != nil {
			t.Fatalf("FromJSON(%s): %v", out, err)
		}
		again, err := msgpack.ToJSON(back, deepLimits)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("round trip of %s gave %s (%v)", out, again, err)
		}
	})
}

func FuzzFromJSON(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	fuzzseed.Add(f, append(fuzzseed.Requests, fuzzseed.Responses...)...)
	for _, tt := range fromJSONCases {
		f.Add([]byte(tt.in))
	}
	for _, tt := range toJSONCases {
		f.Add([]byte(tt.want))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := msgpack.FromJSON(in)
		if err != nil {
			e, ok := errors.AsType[*msgpack.Error](err)
			if !ok {
				t.Fatalf("FromJSON(%q) error %T is not an *Error", in, err)
			}
			// Valid JSON fails only with a number no double can hold.
			if json.Valid(in) && e.Reason != "number beyond the range of a double" {
				t.Fatalf("FromJSON(%q) rejected valid JSON: %v", in, err)
			}
			return
		}
		if !json.Valid(in) {
			t.Fatalf("FromJSON accepted invalid JSON %q", in)
		}
		j, err := msgpack.ToJSON(m, deepLimits)
		if err != nil {
			t.Fatalf("ToJSON(FromJSON(%q)) = %v", in, err)
		}
		// The values survive, and the second trip changes nothing.
		var a, b any
		if json.Unmarshal(in, &a) != nil || json.Unmarshal(j, &b) != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("%q came back as %q", in, j)
		}
		m2, err := msgpack.FromJSON(j)
		if err != nil || !bytes.Equal(m, m2) {
			t.Fatalf("second trip of %q: % x vs % x (%v)", in, m, m2, err)
		}
	})
}
