package sessionrpc

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"
)

// FuzzMember checks Member against encoding/json: for every valid object and key, it
// finds what decoding into a map finds (the last of duplicate keys), byte for byte.
func FuzzMember(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	for i, b := range fuzzseed.Frames(f, fuzzseed.SessionRequest, fuzzseed.SessionResponse) {
		f.Add(string(b), []string{"id", "type", "payload"}[i%3])
	}
	for _, seed := range []struct{ obj, key string }{
		{`{"a":1}`, "a"},
		{` { "a" : "x\"y" , "a":[1,{"b":"]}"}] } `, "a"},
		{`{"n\u0061me":{"s":"}]"},"k\\":null}`, "name"},
		{`{"k\\":true}`, `k\`},
		{`{}`, ""},
		{`[1,2]`, "a"},
		{`{"a":"\ud83d\ude00"}`, "a"},
	} {
		f.Add(seed.obj, seed.key)
	}
	f.Fuzz(func(t *testing.T, obj, key string) {
		if !json.Valid([]byte(obj)) || !utf8.ValidString(obj) {
			return
		}
		var m map[string]json.RawMessage
		isObj := json.Unmarshal([]byte(obj), &m) == nil && m != nil
		want, wantOK := m[key]
		got, ok := Member([]byte(obj), key)
		if !isObj {
			if ok {
				t.Fatalf("Member(%q, %q) found %q in a non-object", obj, key, got)
			}
			return
		}
		if ok != wantOK || !bytes.Equal(got, want) {
			t.Fatalf("Member(%q, %q) = %q, %v; encoding/json finds %q, %v", obj, key, got, ok, want, wantOK)
		}
	})
}

// FuzzAppendString checks that AppendString escapes as encoding/json does.
func FuzzAppendString(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	for _, s := range fuzzseed.Strings(f, 256, fuzzseed.SessionRequest, fuzzseed.SessionResponse, fuzzseed.MCPResult) {
		f.Add(s)
	}
	for _, s := range []string{"", "a\"b\\c", "<&>\n\t\x00\x1f\b\f", "\u2028\u2029", "\xff\xfe", "läst 😀"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
	})
}

// FuzzDecodePeer: DecodePeer is DecodeServer without its content rules — it accepts every
// envelope DecodeServer accepts, reading the same, and refuses every text DecodeServer
// refuses for its syntax or limits.
func FuzzDecodePeer(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	fuzzseed.Add(f, fuzzseed.SessionRequest, fuzzseed.SessionResponse)
	for _, s := range []string{`{"id":"rpc_1","type":"chat.event","payload":{"type":"text-delta","text":"a"}}`,
		`{"type":"error","payload":{"message":"x"}}`, `{"id":null,"type":"x.new"}`, `{"id":"a","id":"b","type":"t"}`,
		`{"id":"a","type":""}`, `{"id":1,"type":"t"}`, `[]`, `{"type":"t","payload":[1]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		peer, perr := DecodePeer(data, DefaultLimits)
		srv, serr := DecodeServer(data, DefaultLimits)
		if serr == nil {
			if perr != nil || peer.ID != srv.ID || peer.Type != srv.Type || !bytes.Equal(peer.Payload, srv.Payload) {
				t.Fatalf("DecodeServer read %+v, DecodePeer %+v, %v", srv, peer, perr)
			}
			return
		}
		switch serr.Reason {
		case ReasonParse, ReasonTooLarge, ReasonDuplicate, ReasonTooDeep, ReasonLongString:
			if perr == nil {
				t.Fatalf("DecodeServer refused %q (%v), DecodePeer read %+v", data, serr, peer)
			}
		}
		if perr == nil && peer.Type == "" {
			t.Fatalf("DecodePeer read an empty type from %q", data)
		}
	})
}
