package transcode_test

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/gatehouse-dev/gatehouse/codecs/transcode"
)

func TestEncodePositional(t *testing.T) {
	md := desc(t, "Positional") // count = 1, name = 2, tags = 3, p1 = 4, p2 = 5
	cases := []struct {
		arr, want, err string
	}{
		{arr: `[]`, want: `{}`},
		{arr: ` [ 3 ] `, want: `{"count":3}`},
		{arr: `[3,"x",["a","b"]]`, want: `{"count":3,"name":"x","tags":["a","b"]}`},
		{arr: `[null,"x"]`, want: `{"name":"x"}`},
		{arr: `["3"]`, want: `{"count":3}`},
		{arr: `[0,"",[],7]`, want: `{"p1":7}`},
		{arr: `[0,"",[],null,8]`, want: `{"p2":8}`},
		{arr: `[0,"",[],7,8]`, err: `[4]: another field of oneof pick is already set`},
		{arr: `[1,"a",[],4,null,6]`, err: `[5]: too many positional parameters`},
		{arr: `["x"]`, err: `[0]: want integer, got string`},
		{arr: `[1,"x",[1]]`, err: `[2][0]: want string, got number`},
		{arr: `{}`, err: `want array, got object`},
		{arr: `[1,]`, err: `[1]: invalid JSON`},
		{arr: `[1] x`, err: `unexpected data after the JSON value`},
	}
	p := plan(t, md, false, false)
	for _, c := range cases {
		got, err := p.EncodePositional(nil, []byte(c.arr))
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("EncodePositional(%s) error = %v, want %s", c.arr, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("EncodePositional(%s): %v", c.arr, err)
			continue
		}
		m := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(got, m); err != nil {
			t.Fatal(err)
		}
		want := dynamicpb.NewMessage(md)
		if err := protojson.Unmarshal([]byte(c.want), want); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(m, want) {
			t.Errorf("EncodePositional(%s) = %v, want %v", c.arr, formatMsg(m), c.want)
		}
	}
	// Value and ListValue take the array as their own form.
	vp := plan(t, desc(t, "google.protobuf.ListValue"), false, false)
	if _, err := vp.EncodePositional(nil, []byte(`[1,"a"]`)); err != nil {
		t.Errorf("ListValue positional: %v", err)
	}
	tp := plan(t, desc(t, "google.protobuf.Timestamp"), false, false)
	if _, err := tp.EncodePositional(nil, []byte(`[1]`)); err == nil {
		t.Errorf("Timestamp positional: no error")
	}
}

func TestDecodeField(t *testing.T) {
	md := desc(t, "Everything")
	w := mustWire(t, md, `{"scalars":{"fInt64":"7","fString":"s"},"orderLow":3,"customName":"c","oneofs":{"oInt":0}}`)
	cases := []struct {
		wire       []byte
		name, want string
		emit       bool
	}{
		{w, "orderLow", `3`, false},
		{w, "order_low", `3`, false},
		{w, "customName", `"c"`, false},
		{w, "json_named", `"c"`, false},
		{w, "scalars", `{"fInt64":"7","fString":"s"}`, false},
		{w, "orderHigh", `0`, false},
		{w, "nested", `null`, false},
		{w, "oneofs", `{"oInt":0}`, false},
		{w, "repeateds", `null`, false},
		{mustWire(t, desc(t, "Oneofs"), `{"oStr":"x"}`), "oInt", `null`, false},
		{mustWire(t, desc(t, "Oneofs"), `{"oInt":0}`), "oInt", `0`, false},
		{mustWire(t, desc(t, "Repeateds"), `{}`), "rInt32", `[]`, false},
		{mustWire(t, desc(t, "Repeateds"), `{"rInt32":[1,2]}`), "rInt32", `[1,2]`, false},
		{mustWire(t, desc(t, "Maps"), `{}`), "i32", `{}`, false},
		{mustWire(t, desc(t, "Optionals"), `{}`), "oInt32", `null`, false},
		{mustWire(t, desc(t, "Optionals"), `{"oInt32":0}`), "oInt32", `0`, false},
		{mustWire(t, desc(t, "WellKnown"), `{"ts":"1970-01-01T00:00:01Z"}`), "ts", `"1970-01-01T00:00:01Z"`, false},
		{mustWire(t, desc(t, "WellKnown"), `{"wInt32":0}`), "wInt32", `0`, false},
		{mustWire(t, desc(t, "Scalars"), `{}`), "fInt64", `"0"`, true},
	}
	for _, c := range cases {
		md := md
		switch c.name {
		case "oInt":
			md = desc(t, "Oneofs")
		case "rInt32":
			md = desc(t, "Repeateds")
		case "i32":
			md = desc(t, "Maps")
		case "oInt32":
			md = desc(t, "Optionals")
		case "ts", "wInt32":
			md = desc(t, "WellKnown")
		case "fInt64":
			md = desc(t, "Scalars")
		}
		got, err := plan(t, md, false, c.emit).DecodeField([]byte("x"), c.wire, c.name)
		if err != nil {
			t.Errorf("DecodeField(%s): %v", c.name, err)
			continue
		}
		if string(got) != "x"+c.want {
			t.Errorf("DecodeField(%s) = %s, want x%s", c.name, got, c.want)
		}
	}
	p := plan(t, md, false, false)
	if _, err := p.DecodeField(nil, w, "nope"); err == nil {
		t.Error("DecodeField(nope): no error")
	}
	// The rest of the message is checked even though it is not written.
	bad := append(append([]byte(nil), w...), 0x3a, 0x02, 0x12, 0x05) // nested: truncated string
	if _, err := p.DecodeField(nil, bad, "orderLow"); err == nil {
		t.Error("DecodeField over malformed bytes: no error")
	}
	bad = append(append([]byte(nil), w...), 0x3a, 0x03, 0x12, 0x01, 0xff) // nested.b: invalid UTF-8
	if _, err := p.DecodeField(nil, bad, "orderLow"); err == nil {
		t.Error("DecodeField over invalid UTF-8: no error")
	}
}

func TestPathErrors(t *testing.T) {
	cases := []struct{ msg, doc, want string }{
		{"Everything", `{"scalars":{"fInt32":"x"}}`, `scalars.fInt32: want integer, got string`},
		{"Everything", `{"scalars":{"f_int32":true}}`, `scalars.f_int32: want integer, got boolean`},
		{"Everything", `{"scalars":{"fInt32":2147483648}}`, `scalars.fInt32: want integer in the int32 range`},
		{"Everything", `{"scalars":{"fInt32":1.5}}`, `scalars.fInt32: want integer in the int32 range`},
		{"Everything", `{"repeateds":{"rMsg":[{},{},{"b":1}]}}`, `repeateds.rMsg[2].b: want string, got number`},
		{"Everything", `{"maps":{"strStr":{"k":1}}}`, `maps.strStr["k"]: want string, got number`},
		{"Everything", `{"maps":{"i32":{"x":1}}}`, `maps.i32["x"]: want integer map key`},
		{"Everything", `{"maps":{"i32":{"1":1,"01":2}}}`, `maps.i32["01"]: duplicate map key`},
		{"Everything", `{"nested":{"a":1,"a":2}}`, `nested.a: duplicate field`},
		{"Everything", `{"nope":1}`, `nope: unknown field`},
		{"Everything", `{"we ird\"":1}`, `["we ird\""]: unknown field`},
		{"Everything", `{"oneofs":{"oInt":1,"oStr":"x"}}`, `oneofs.oStr: another field of oneof choice is already set`},
		{"Everything", `{"scalars":{"fEnum":"SECRET"}}`, `scalars.fEnum: unknown enum value name`},
		{"Everything", `{"scalars":{"fBytes":"%%%"}}`, `scalars.fBytes: invalid base64`},
		{"Everything", `{"wkt":{"ts":"yesterday"}}`, `wkt.ts: invalid google.protobuf.Timestamp`},
		{"Everything", `{"wkt":{"st":{"a":{"b":[1,{"c":1e999}]}}}}`, `wkt.st["a"]["b"][1]["c"]: want number in the double range`},
		{"Everything", `{"wkt":{"any":{"a":1}}}`, `wkt.any: missing "@type"`},
		{"Everything", `{"scalars":{"fString":"\ud800"}}`, `scalars.fString: invalid escape in string`},
		{"Everything", `{"scalars":`, `scalars: unexpected end of JSON input`},
		{"Everything", `[]`, `want object, got array`},
		{"transcode.test2.Req", `{"child":{"id":1}}`, `id: required field is not set`},
		{"transcode.test2.Req", `{"id":1,"list":[{"id":1},{}]}`, `list[1].id: required field is not set`},
	}
	for _, c := range cases {
		_, err := plan(t, desc(t, c.msg), false, false).EncodeJSON(nil, []byte(c.doc))
		var pe *transcode.PathError
		if !errors.As(err, &pe) {
			t.Errorf("EncodeJSON(%s) error = %v, want a *PathError", c.doc, err)
			continue
		}
		if err.Error() != c.want {
			t.Errorf("EncodeJSON(%s) error = %q, want %q", c.doc, err, c.want)
		}
		if strings.Contains(pe.Reason, "SECRET") || strings.Contains(pe.Reason, "yesterday") {
			t.Errorf("reason %q repeats the value", pe.Reason)
		}
	}
	// Wire errors name the field path too.
	md := desc(t, "Everything")
	bad := []byte{0x3a, 0x03, 0x12, 0x01, 0xff} // nested.b: invalid UTF-8
	_, err := plan(t, md, false, false).DecodeWire(nil, bad)
	if err == nil || err.Error() != "nested.b: invalid UTF-8 in string" {
		t.Errorf("DecodeWire error = %v", err)
	}
}

func TestDestinationAppend(t *testing.T) {
	md := desc(t, "Nested")
	p := plan(t, md, false, false)
	dst := []byte("prefix")
	out, err := p.EncodeJSON(dst, []byte(`{"a":1}`))
	if err != nil || string(out[:6]) != "prefix" {
		t.Fatalf("EncodeJSON = %q, %v", out, err)
	}
	out, err = p.EncodeJSON(dst, []byte(`{"a":"x"}`))
	if err == nil || string(out) != "prefix" {
		t.Fatalf("failing EncodeJSON = %q, %v; want dst back", out, err)
	}
	js, err := p.DecodeWire([]byte("["), []byte{0x08, 0x01})
	if err != nil || string(js) != `[{"a":1}` {
		t.Fatalf("DecodeWire = %q, %v", js, err)
	}
}

func TestCache(t *testing.T) {
	c := transcode.NewCache(transcode.Options{Resolver: schemaTypes})
	md := desc(t, "Everything")
	p1, err := c.Plan(md)
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := c.Plan(md)
	if p1 != p2 {
		t.Error("Cache.Plan compiled twice")
	}
	if p1.Descriptor() != md {
		t.Error("Plan.Descriptor differs")
	}
	// A recompiled descriptor set gets a new plan.
	other := dynamicpb.NewMessageType(md).Descriptor()
	if p3, _ := c.Plan(other); p3 != p1 {
		t.Error("same descriptor value gave a new plan")
	}
}

// TestConcurrent runs plans from many goroutines, for the race detector.
func TestConcurrent(t *testing.T) {
	c := transcode.NewCache(transcode.Options{Resolver: schemaTypes})
	docs := []string{
		`{"wkt":{"any":{"@type":"type.googleapis.com/transcode.test.Maps","i32":{"2":1,"1":2}}}}`,
		`{"nested":{"a":1,"children":[{"b":"x"}]},"maps":{"strStr":{"a":"b"}}}`,
		`{"wkt":{"st":{"a":[1,2,{"b":null}]},"ts":"2024-01-01T00:00:00Z"}}`,
	}
	md := desc(t, "Everything")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			p, err := c.Plan(md)
			if err != nil {
				t.Error(err)
				return
			}
			for i := range 200 {
				doc := docs[(g+i)%len(docs)]
				wire, err := p.EncodeJSON(nil, []byte(doc))
				if err != nil {
					t.Error(err)
					return
				}
				js, err := p.DecodeWire(nil, wire)
				if err != nil {
					t.Error(err)
					return
				}
				if d := jsonDiff(js, []byte(doc)); d != "" {
					t.Error(d)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestLengthPrefixes crosses the sizes at which a nested message's length needs another
// byte, which makes the encoder move what it already wrote.
func TestLengthPrefixes(t *testing.T) {
	md := desc(t, "Everything")
	for _, n := range []int{0, 120, 124, 125, 126, 127, 128, 16380, 16381, 16383, 16384, 1 << 21} {
		doc := `{"nested":{"child":{"b":"` + strings.Repeat("x", n) + `"},"a":1}}`
		if d := encodeDiff(t, md, false, []byte(doc)); d != "" {
			t.Errorf("string of %d: %s", n, d)
		}
		wire := mustWire(t, md, doc)
		if d := decodeDiff(t, md, false, wire); d != "" {
			t.Errorf("string of %d: %s", n, d)
		}
	}
}

// TestNameTable looks up many similar names: the table's hash reads only four bytes.
func TestNameTable(t *testing.T) {
	md := desc(t, "Wide")
	p := plan(t, md, false, false)
	for i := 1; i <= 70; i++ {
		doc := []byte(`{"w` + strconv.Itoa(i) + `":1}`)
		if _, err := p.EncodeJSON(nil, doc); err != nil {
			t.Errorf("%s: %v", doc, err)
		}
	}
	for _, name := range []string{"w0", "w71x", "w", "W1", "w01", ""} {
		if _, err := p.EncodeJSON(nil, []byte(`{"`+name+`":1}`)); err == nil {
			t.Errorf("%q: no error", name)
		}
	}
}
