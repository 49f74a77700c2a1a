package sessionrpc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"
)

func TestDecodeRequest(t *testing.T) {
	small := Limits{MaxBytes: 200, MaxDepth: 3, MaxStringBytes: 16}
	cases := []struct {
		name, in string
		lim      Limits
		reason   string
		id       string
	}{
		{"status.get without payload", `{"id":"rpc_1","type":"status.get"}`, DefaultLimits, "", "rpc_1"},
		{"chat.start", `{"id":"rpc_2","type":"chat.start","payload":{"message":"hi","x":[1,{"y":2}]}}`, DefaultLimits, "", "rpc_2"},
		{"null payload", `{"id":"a","type":"task.status","payload":null}`, DefaultLimits, "", "a"},
		{"unknown envelope member ignored", `{"id":"a","type":"status.get","extra":1}`, DefaultLimits, "", "a"},
		{"not json", `{"id":`, DefaultLimits, ReasonParse, ""},
		{"array", `[1]`, DefaultLimits, ReasonParse, ""},
		{"trailing data", `{"id":"a","type":"status.get"} {}`, DefaultLimits, ReasonParse, ""},
		{"trailing comma", `{"id":"a","type":"status.get",}`, DefaultLimits, ReasonParse, ""},
		{"duplicate id", `{"id":"a","id":"b","type":"status.get"}`, DefaultLimits, ReasonDuplicate, ""},
		{"duplicate deep", `{"id":"a","type":"chat.start","payload":{"m":{"k":1,"k":2}}}`, DefaultLimits, ReasonDuplicate, ""},
		{"missing id", `{"type":"status.get"}`, DefaultLimits, ReasonMissingID, ""},
		{"empty id", `{"id":"","type":"status.get"}`, DefaultLimits, ReasonMissingID, ""},
		{"numeric id", `{"id":1,"type":"status.get"}`, DefaultLimits, ReasonMissingID, ""},
		{"long id", `{"id":"` + strings.Repeat("x", MaxIDBytes+1) + `","type":"status.get"}`, DefaultLimits, ReasonMissingID, ""},
		{"unknown type", `{"id":"a","type":"chat.done"}`, DefaultLimits, ReasonUnknownType, "a"},
		{"missing type", `{"id":"a"}`, DefaultLimits, ReasonUnknownType, "a"},
		{"payload not object", `{"id":"a","type":"chat.start","payload":[1]}`, DefaultLimits, ReasonPayload, "a"},
		{"too large", `{"id":"a","type":"chat.start","payload":{"m":"` + strings.Repeat("x", 200) + `"}}`, small, ReasonTooLarge, ""},
		{"too deep", `{"id":"a","type":"chat.start","payload":{"a":{"b":[1]}}}`, small, ReasonTooDeep, ""},
		{"at depth limit", `{"id":"a","type":"chat.start","payload":{"a":1}}`, Limits{MaxBytes: 200, MaxDepth: 2, MaxStringBytes: 16}, "", "a"},
		{"long string", `{"id":"a","type":"chat.start","payload":{"m":"` + strings.Repeat("x", 17) + `"}}`, small, ReasonLongString, ""},
		{"long key", `{"id":"a","type":"chat.start","payload":{"` + strings.Repeat("x", 17) + `":1}}`, small, ReasonLongString, ""},
		{"escaped duplicate", `{"id":"a","type":"status.get","payload":{"a":1,"\u0061":2}}`, DefaultLimits, ReasonDuplicate, ""},
		{"many members then duplicate", `{"id":"a","type":"status.get","payload":{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"i":1,"j":1,"c":2}}`, DefaultLimits, ReasonDuplicate, ""},
		{"numbers and literals", `{"id":"a","type":"chat.start","payload":{"n":[0,-1,1.5,2e10,-3.25E-2,true,false,null,"\u00e9\n"]}}`, DefaultLimits, "", "a"},
		{"leading zero", `{"id":"a","type":"status.get","payload":{"n":01}}`, DefaultLimits, ReasonParse, ""},
		{"bare minus", `{"id":"a","type":"status.get","payload":{"n":-}}`, DefaultLimits, ReasonParse, ""},
		{"bad escape", `{"id":"a","type":"status.get","payload":{"n":"\x"}}`, DefaultLimits, ReasonParse, ""},
		{"control character", "{\"id\":\"a\",\"type\":\"status.get\",\"payload\":{\"n\":\"\x01\"}}", DefaultLimits, ReasonParse, ""},
		{"invalid utf8", "{\"id\":\"a\xff\",\"type\":\"status.get\"}", DefaultLimits, ReasonParse, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env, err := DecodeRequest([]byte(tc.in), tc.lim)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if env.ID != tc.id {
					t.Fatalf("id %q, want %q", env.ID, tc.id)
				}
				return
			}
			if err == nil || err.Reason != tc.reason {
				t.Fatalf("got %v, want %s", err, tc.reason)
			}
			if err.ID != tc.id {
				t.Fatalf("error id %q, want %q", err.ID, tc.id)
			}
		})
	}
}

func TestDecodeFrameAndServer(t *testing.T) {
	if f, err := DecodeFrame([]byte(`{"type":"chat.event","payload":{"type":"text-delta","text":"a","z":1}}`), DefaultLimits); err != nil || f.Type != TypeChatEvent || string(f.Payload) != `{"type":"text-delta","text":"a","z":1}` {
		t.Fatalf("frame: %+v %v", f, err)
	}
	if f, err := DecodeFrame([]byte(`{"type":"chat.done"}`), DefaultLimits); err != nil || string(f.Payload) != `{}` {
		t.Fatalf("done without payload: %+v %v", f, err)
	}
	for _, bad := range []string{`{"type":"chat.start","payload":{}}`, `{"type":"chat.event","payload":"x"}`, `{"type":"chat.event","type":"chat.done"}`, `{}`} {
		if _, err := DecodeFrame([]byte(bad), DefaultLimits); err == nil {
			t.Errorf("frame %s accepted", bad)
		}
	}
	if env, err := DecodeServer([]byte(`{"id":"rpc_1","type":"chat.queued","payload":{"taskId":"t","position":2}}`), DefaultLimits); err != nil || env.Type != TypeChatQueued {
		t.Fatalf("server: %+v %v", env, err)
	}
	if _, err := DecodeServer([]byte(`{"id":"rpc_1","type":"chat.start"}`), DefaultLimits); err == nil {
		t.Fatal("a client type accepted as a server message")
	}
}

func TestAppendEnvelopeRoundTrips(t *testing.T) {
	for _, id := range []string{"rpc_1", "a\"b\\c\n\t\x01<>&", "ünï\u2028", "bad\xffutf8"} {
		out := AppendEnvelope(nil, id, TypeChatEvent, []byte(`{"type":"status"}`))
		var env Envelope
		if err := json.Unmarshal(out, &env); err != nil {
			t.Fatalf("%q: %s: %v", id, out, err)
		}
		want := strings.ToValidUTF8(id, "\ufffd")
		if env.ID != want || env.Type != TypeChatEvent || string(env.Payload) != `{"type":"status"}` {
			t.Fatalf("%q: round trip %+v", id, env)
		}
	}
	if out := AppendEnvelope(nil, "a", TypeChatStarted, nil); string(out) != `{"id":"a","type":"chat.started"}` {
		t.Fatalf("no payload: %s", out)
	}
}

func TestAppendWithMember(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"text":"x"}`, `{"taskId":"t1","text":"x"}`},
		{`{}`, `{"taskId":"t1"}`},
		{` { } `, `{"taskId":"t1"}`},
		{`{"taskId":"upstream","text":"x"}`, `{"taskId":"t1","text":"x"}`},
		{`[1]`, `{"taskId":"t1"}`},
		{``, `{"taskId":"t1"}`},
	}
	for _, tc := range cases {
		if got := string(AppendWithMember(nil, []byte(tc.in), "taskId", "t1")); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestChecker(t *testing.T) {
	ev := func(p string) Frame { return Frame{Type: TypeChatEvent, Payload: json.RawMessage(p)} }
	done := Frame{Type: TypeChatDone, Payload: json.RawMessage(`{"text":"x"}`)}
	fail := Frame{Type: TypeChatError, Payload: json.RawMessage(`{"errorId":"e","message":"m"}`)}
	cases := []struct {
		name   string
		frames []Frame
		broken int // index of the frame refused; -1 none
	}{
		{"full conversation", []Frame{ev(`{"type":"status","status":"thinking"}`), ev(`{"type":"reasoning","text":"r"}`),
			ev(`{"type":"tool-call","id":"c1","name":"n","args":{}}`), ev(`{"type":"tool-output","id":"c1","output":"o"}`),
			ev(`{"type":"tool-result","id":"c1","success":true,"result":1}`), ev(`{"type":"text-delta","text":"t"}`),
			ev(`{"type":"usage","inputTokens":1,"outputTokens":2}`), ev(`{"type":"checklist","groupId":"g","title":"t","items":[]}`),
			ev(`{"type":"future-event","whatever":true}`), done}, -1},
		{"error terminal", []Frame{fail}, -1},
		{"tool-output without call", []Frame{ev(`{"type":"tool-output","id":"c9","output":"o"}`)}, 0},
		{"tool-result without call", []Frame{ev(`{"type":"tool-call","id":"c1","name":"n"}`), ev(`{"type":"tool-result","id":"c2","success":true}`)}, 1},
		{"tool-result numeric id", []Frame{ev(`{"type":"tool-call","id":"1","name":"n"}`), ev(`{"type":"tool-result","id":1,"success":true}`)}, 1},
		{"tool-call twice", []Frame{ev(`{"type":"tool-call","id":"c1"}`), ev(`{"type":"tool-call","id":"c1"}`)}, 1},
		{"tool-call without id", []Frame{ev(`{"type":"tool-call","name":"n"}`)}, 0},
		{"event without type", []Frame{ev(`{"text":"x"}`)}, 0},
		{"event empty type", []Frame{ev(`{"type":""}`)}, 0},
		{"event numeric type", []Frame{ev(`{"type":3}`)}, 0},
		{"event not object", []Frame{ev(`"x"`)}, 0},
		{"after terminal", []Frame{done, ev(`{"type":"status"}`)}, 1},
		{"two terminals", []Frame{done, fail}, 1},
		{"unknown frame", []Frame{{Type: "chat.started", Payload: json.RawMessage(`{}`)}}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c Checker
			for i, f := range tc.frames {
				_, err := c.Check(f)
				if (err != nil) != (i == tc.broken) {
					t.Fatalf("frame %d: %v (want refusal at %d)", i, err, tc.broken)
				}
				if err != nil {
					return
				}
			}
			if tc.broken >= 0 {
				t.Fatal("nothing refused")
			}
		})
	}
}

func FuzzDecodeRequest(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	fuzzseed.Add(f, fuzzseed.SessionRequest)
	for _, s := range []string{`{"id":"rpc_1","type":"chat.start","payload":{"message":"hi"}}`, `{"id":"a","id":"b"}`, `[]`, `{"id":"x","type":"status.get","payload":{"a":[[[[1]]]]}}`} {
		f.Add([]byte(s))
	}
	lim := Limits{MaxBytes: 4096, MaxDepth: 4, MaxStringBytes: 64}
	// A real frame past MaxBytes (trailing spaces: only the size check refuses it).
	f.Add(append(fuzzseed.Frames(f, fuzzseed.SessionRequest)[0], bytes.Repeat([]byte{' '}, 4096)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		env, err := DecodeRequest(data, lim)
		// Past the limit: the typed too-large error, before anything is decoded.
		if big := int64(len(data)) > lim.MaxBytes; big != (err != nil && err.Reason == ReasonTooLarge) {
			t.Fatalf("DecodeRequest of %d bytes (limit %d): %+v", len(data), lim.MaxBytes, err)
		}
		if err != nil {
			if err.Reason == "" {
				t.Fatalf("DecodeRequest(%q): an error without a reason: %+v", data, err)
			}
			return
		}
		if env.ID == "" || !IsClientType(env.Type) || (env.Payload != nil && !json.Valid(env.Payload)) {
			t.Fatalf("accepted %q as %+v", data, env)
		}
		out := AppendEnvelope(nil, env.ID, env.Type, env.Payload)
		again, err := DecodeRequest(out, Limits{MaxBytes: 1 << 20, MaxDepth: 4, MaxStringBytes: 1 << 20})
		if err != nil || again.ID != env.ID || again.Type != env.Type {
			t.Fatalf("re-encoded %s: %+v %v", out, again, err)
		}
	})
}

func FuzzDecodeServer(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	fuzzseed.Add(f, fuzzseed.SessionResponse)
	f.Add([]byte(`{"id":"rpc_1","type":"chat.queued","payload":{"taskId":"t","position":1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		env, err := DecodeServer(data, DefaultLimits)
		if err == nil && (!IsServerType(env.Type) || env.ID == "") {
			t.Fatalf("accepted %q as %+v", data, env)
		}
	})
}

func FuzzDecodeFrame(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	fuzzseed.Add(f, fuzzseed.SessionRequest, fuzzseed.SessionResponse)
	f.Add([]byte(`{"type":"chat.event","payload":{"type":"tool-call","id":"c1"}}`))
	f.Add([]byte(`{"type":"chat.done","payload":{"text":"x"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := DecodeFrame(data, DefaultLimits)
		if err != nil {
			return
		}
		if !json.Valid(fr.Payload) {
			t.Fatalf("accepted %q with payload %s", data, fr.Payload)
		}
		var c Checker
		_, _ = c.Check(fr)
		out := AppendWithMember(nil, fr.Payload, "taskId", "task_1")
		if !json.Valid(out) {
			t.Fatalf("AppendWithMember(%s) = %s", fr.Payload, out)
		}
	})
}

// FuzzScannerAgreesWithEncodingJSON: the decoders' scanner accepts exactly the JSON
// objects of valid UTF-8 encoding/json accepts, unless a limit or a duplicate member
// refuses them.
func FuzzScannerAgreesWithEncodingJSON(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	fuzzseed.Add(f, fuzzseed.SessionRequest, fuzzseed.SessionResponse, fuzzseed.JSONRPCRequest)
	for _, s := range []string{`{"a":[1,2.5e3,"x\u00e9"]}`, `{"a":1,"a":2}`, `{"a":01}`, `{}`, ` {"b":{"c":null}} `, `{"a":"\ud800"}`} {
		f.Add([]byte(s))
	}
	lim := Limits{MaxBytes: 1 << 20, MaxDepth: 1 << 10, MaxStringBytes: 1 << 20}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := decodeObject(data, lim)
		trimmed := strings.TrimLeft(string(data), " \t\r\n")
		valid := json.Valid(data) && utf8.Valid(data) && strings.HasPrefix(trimmed, "{") // invalid UTF-8 is refused on purpose
		if err == nil && !valid {
			t.Fatalf("accepted %q, which encoding/json refuses", data)
		}
		if err != nil && err.Reason == ReasonParse && valid {
			t.Fatalf("refused %q (%v), which encoding/json accepts", data, err)
		}
	})
}
