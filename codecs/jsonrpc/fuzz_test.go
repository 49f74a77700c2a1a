package jsonrpc_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// fuzzSeeds are the spec examples plus bodies that reach each rule of the decoder.
func fuzzSeeds() []string {
	seeds := []string{
		``, `[]`, `[1]`, `{}`, `"x"`, `1`,
		`{"jsonrpc":"2.0","method":"m","params":{"depends_on":["a",1],"deadline_ms":5,"x":{"y":[1,{"z":null}]}},"id":"q"}`,
		`{"jsonrpc":"2.0","method":"m","params":{"a":1,"\u0061":2},"id":1}`,
		`{"\u006asonrpc":"2.0","\u006dethod":"\ud83d\ude00\ud800","id":1e400}`,
		`{"jsonrpc":"2.0","method":"m","id":1,"id":2}`,
		`[{"jsonrpc":"2.0","method":"m","params":[[[[[[]]]]]]}, {"foo":"bar"}, null]`,
		"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}",
		`{"jsonrpc":"2.0","method":"m","params":{"deadline_ms":9007199254740993}}`,
	}
	for _, ex := range specExamples {
		seeds = append(seeds, ex.body)
	}
	return seeds
}

func FuzzDecode(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	for _, b := range fuzzseed.Frames(f, append(fuzzseed.Requests, fuzzseed.Responses...)...) {
		f.Add(b, uint8(0), uint16(0))
	}
	for _, s := range fuzzSeeds() {
		f.Add([]byte(s), uint8(0), uint16(0))
		f.Add([]byte(s), uint8(3), uint16(8))
	}
	f.Fuzz(func(t *testing.T, body []byte, depth uint8, maxStr uint16) {
		lim := jsonrpc.Limits{MaxDepth: int(depth), MaxStringBytes: int(maxStr)}
		p, err := jsonrpc.Decode(body, lim)
		syntaxOK := json.Valid(body) && utf8.Valid(body)
		if gotParse := err != nil && err.Code == schemas.CodeParseError; gotParse == syntaxOK {
			t.Fatalf("Decode(%q) error %+v; json.Valid && utf8.Valid = %v", body, err, syntaxOK)
		}
		if err != nil {
			if p.Batch || p.Members != nil || !err.ID.IsZero() || err.Reason == "" {
				t.Fatalf("Decode(%q) = %+v with error %+v", body, p, err)
			}
			return
		}
		elems := elements(t, body, p.Batch)
		if len(elems) != len(p.Members) {
			t.Fatalf("Decode(%q) has %d members; encoding/json sees %d elements", body, len(p.Members), len(elems))
		}
		for i, m := range p.Members {
			dup := hasDuplicateNames(t, elems[i])
			if dup && (m.Err == nil || m.Err.Code != schemas.CodeInvalidRequest) {
				t.Fatalf("Decode(%q) member %d = %+v, %+v despite duplicate names", body, i, m.Request, m.Err)
			}
			if !dup && m.Err != nil && m.Err.Reason == "duplicate member name" {
				t.Fatalf("Decode(%q) member %d reports a duplicate name that encoding/json does not see", body, i)
			}
			if m.Err == nil {
				checkAccepted(t, elems[i], m.Request, lim)
			}
		}
	})
}

// elements splits a decoded body into the raw JSON of its members, using encoding/json.
func elements(t *testing.T, body []byte, batch bool) []json.RawMessage {
	t.Helper()
	if !batch {
		return []json.RawMessage{body}
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(body, &elems); err != nil {
		t.Fatalf("encoding/json cannot split batch %q: %v", body, err)
	}
	return elems
}

// hasDuplicateNames reports whether any object in the valid JSON value raw repeats a name,
// reading it with encoding/json's tokenizer.
func hasDuplicateNames(t *testing.T, raw []byte) bool {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	type frame struct {
		object bool
		names  map[string]bool
		key    bool // the next token is a name
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return false
		}
		if err != nil {
			t.Fatalf("encoding/json cannot tokenize %q: %v", raw, err)
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if s, ok := tok.(string); ok && top != nil && top.object && top.key {
			if top.names[s] {
				return true
			}
			top.names[s], top.key = true, false
			continue
		}
		if top != nil && top.object {
			top.key = true // a value ended, or a container opened and will set its own
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, names: map[string]bool{}, key: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].object {
				stack[len(stack)-1].key = true
			}
		}
	}
}

func TestHasDuplicateNames(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]bool{
		`{"a":1,"b":{"a":2}}`:           false,
		`[{"a":1},{"a":1}]`:             false,
		`{"a":{"x":1},"b":[1,{"c":2}]}`: false,
		`{"a":1,"\u0061":2}`:            true,
		`{"a":{"b":[1,{"c":1,"c":1}]}}`: true,
		`{"a":{},"a":[]}`:               true,
	} {
		if got := hasDuplicateNames(t, []byte(raw)); got != want {
			t.Errorf("hasDuplicateNames(%s) = %v; want %v", raw, got, want)
		}
	}
}

// checkAccepted compares an accepted request with what encoding/json reads from its raw
// element, then re-encodes it and decodes it again.
func checkAccepted(t *testing.T, elem []byte, r jsonrpc.Request, lim jsonrpc.Limits) {
	t.Helper()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(elem, &obj); err != nil {
		t.Fatalf("encoding/json cannot read accepted %q: %v", elem, err)
	}
	var version, method string
	_ = json.Unmarshal(obj["jsonrpc"], &version)
	_ = json.Unmarshal(obj["method"], &method)
	for name := range obj {
		if name != "jsonrpc" && name != "method" && name != "params" && name != "id" {
			t.Fatalf("accepted %q with member %q", elem, name)
		}
	}
	if version != "2.0" || method != r.Method || method == "" {
		t.Fatalf("accepted %q: encoding/json reads jsonrpc %q method %q; Decode method %q", elem, version, method, r.Method)
	}
	if id, ok := obj["id"]; ok != !r.ID.IsZero() || (ok && string(id) != r.ID.Raw()) {
		t.Fatalf("accepted %q: encoding/json reads id %q (%v); Decode %q", elem, id, ok, rawID(r.ID))
	}
	checkParams(t, elem, obj["params"], r)
	reencoded := reencode(r)
	p, err := jsonrpc.Decode(reencoded, lim)
	if err != nil || len(p.Members) != 1 || p.Members[0].Err != nil {
		t.Fatalf("re-encoded %q as %q, which decodes as %+v, %+v", elem, reencoded, p, err)
	}
	if got := p.Members[0].Request; got.Method != r.Method || rawID(got.ID) != rawID(r.ID) || !bytes.Equal(got.Params, r.Params) {
		t.Fatalf("re-encoded %q as %q, which decodes as %+v; want %+v", elem, reencoded, got, r)
	}
}

// checkParams compares decoded params, with reserved members taken out, with the original.
func checkParams(t *testing.T, elem, orig []byte, r jsonrpc.Request) {
	t.Helper()
	if orig == nil || orig[0] != '{' {
		if !bytes.Equal(orig, r.Params) || r.DependsOn != nil || r.DeadlineMs != 0 {
			t.Fatalf("accepted %q: params %q, deps %v, deadline %d; want params %q", elem, r.Params, r.DependsOn, r.DeadlineMs, orig)
		}
		return
	}
	var want, got map[string]json.RawMessage
	if err := json.Unmarshal(orig, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(r.Params, &got); err != nil {
		t.Fatalf("accepted %q: params %q are not an object: %v", elem, r.Params, err)
	}
	var deps []json.RawMessage
	if raw, ok := want["depends_on"]; ok {
		_ = json.Unmarshal(raw, &deps)
	}
	if len(deps) != len(r.DependsOn) {
		t.Fatalf("accepted %q: depends_on %q; Decode %v", elem, deps, r.DependsOn)
	}
	for i, d := range deps {
		if string(d) != r.DependsOn[i].Raw() {
			t.Fatalf("accepted %q: depends_on %q; Decode %v", elem, deps, r.DependsOn)
		}
	}
	var deadline int64
	if raw, ok := want["deadline_ms"]; ok {
		if err := json.Unmarshal(raw, &deadline); err != nil || deadline <= 0 || deadline > 1<<53 {
			t.Fatalf("accepted %q with deadline_ms %s", elem, raw)
		}
	}
	if deadline != r.DeadlineMs {
		t.Fatalf("accepted %q: deadline_ms %d; Decode %d", elem, deadline, r.DeadlineMs)
	}
	delete(want, "depends_on")
	delete(want, "deadline_ms")
	if len(got) != len(want) {
		t.Fatalf("accepted %q: params %q; want the members of %q but reserved ones", elem, r.Params, orig)
	}
	for k, v := range want {
		if !bytes.Equal(got[k], v) {
			t.Fatalf("accepted %q: params %q; want the members of %q but reserved ones", elem, r.Params, orig)
		}
	}
}

// reencode writes r back as a request.
func reencode(r jsonrpc.Request) []byte {
	b := []byte(`{"jsonrpc":"2.0","method":`)
	b = jsonrpc.AppendString(b, r.Method)
	if r.Params != nil {
		b = append(append(b, `,"params":`...), r.Params...)
	}
	if !r.ID.IsZero() {
		b = append(append(b, `,"id":`...), r.ID.Raw()...)
	}
	return append(b, '}')
}

func FuzzAppendString(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	for _, s := range fuzzseed.Strings(f, 256, fuzzseed.Kinds...) {
		f.Add(s)
	}
	for _, s := range []string{"", "a", "\"\\/\b\f\n\r\t", "\x00\x1f\x7f", "<>&", "\u2028\u2029", "é€😀", "\xff", "\xed\xa0\x80", "\xe2\x82"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := jsonrpc.AppendString(nil, s)
		if std := stdString(t, s); string(got) != std {
			t.Fatalf("AppendString(%q) = %s; encoding/json writes %s", s, got, std)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("encoding/json cannot read AppendString(%q) = %s: %v", s, got, err)
		}
		if want := strings.ToValidUTF8(s, "\ufffd"); utf8.ValidString(s) && back != want {
			t.Fatalf("round trip of %q gives %q", s, back)
		}
		id := jsonrpc.RawID(got)
		if id.Key() != jsonrpc.RawID(jsonrpc.AppendString(nil, back)).Key() {
			t.Fatalf("Key(%s) differs from the key of its decoded value %q", got, back)
		}
	})
}

func FuzzIDKey(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	ids := fuzzseed.Find(f, "id", fuzzseed.Requests...)
	for i, id := range ids {
		f.Add(string(id), string(ids[(i+1)%len(ids)]))
	}
	for _, p := range [][2]string{{"1", "1.0"}, {"1e2", "100"}, {"-0", "0"}, {"9007199254740993", "9007199254740992"}, {"0.1e1", "10e-1"}} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ra, okA := exactNumber(a)
		rb, okB := exactNumber(b)
		if !okA || !okB {
			return
		}
		ka, kb := jsonrpc.RawID([]byte(a)).Key(), jsonrpc.RawID([]byte(b)).Key()
		if (ka == kb) != (ra.Cmp(rb) == 0) {
			t.Fatalf("Key(%s) = %q, Key(%s) = %q; values equal = %v", a, ka, b, kb, ra.Cmp(rb) == 0)
		}
	})
}

// exactNumber returns the exact value of the JSON number s, for numbers small enough to
// compute with.
func exactNumber(s string) (*big.Rat, bool) {
	if len(s) > 40 || !json.Valid([]byte(s)) || strings.ContainsAny(s, "\"[{tfn \t\r\n") {
		return nil, false
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 && len(strings.TrimLeft(s[i+1:], "+-0")) > 3 {
		return nil, false
	}
	return new(big.Rat).SetString(s)
}
