package server

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	vmsgpack "github.com/vmihailenco/msgpack/v5"
	"golang.org/x/tools/txtar"

	"github.com/gatehouse-dev/gatehouse/codecs/msgpack"
	"github.com/gatehouse-dev/gatehouse/gateway"
)

// mpFromJSON is the MessagePack of a JSON text.
func mpFromJSON(t *testing.T, j string) []byte {
	t.Helper()
	b, err := msgpack.FromJSON([]byte(j))
	if err != nil {
		t.Fatalf("FromJSON(%s): %v", j, err)
	}
	return b
}

// mpToJSON is the JSON text of a MessagePack body ("" for an empty one).
func mpToJSON(t *testing.T, b []byte) string {
	t.Helper()
	if len(b) == 0 {
		return ""
	}
	j, err := msgpack.ToJSON(b, msgpack.Limits{})
	if err != nil {
		t.Fatalf("the gateway answered MessagePack that does not read back (%x): %v", b, err)
	}
	return string(j)
}

// canonical is a JSON text as it reads back after a MessagePack round trip (numbers and
// string escapes spelled as ToJSON spells them), ending with a newline like a golden section.
func canonical(t *testing.T, j string) string {
	t.Helper()
	if strings.TrimSpace(j) == "" {
		return ""
	}
	return mpToJSON(t, mpFromJSON(t, j)) + "\n"
}

// postMsgpack sends body to /rpc as application/x-msgpack.
func (ts *testServer) postMsgpack(body []byte, header ...string) (int, http.Header, []byte) {
	ts.t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.base+"/rpc", bytes.NewReader(body))
	if err != nil {
		ts.t.Fatal(err)
	}
	req.Header.Set("Content-Type", msgpack.ContentType)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		ts.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// TestGoldenMsgpack replays every golden exchange whose request is JSON as MessagePack,
// over HTTP and in WebSocket binary messages: the answers are the golden ones, in
// MessagePack (compared after reading them back as JSON).
func TestGoldenMsgpack(t *testing.T) {
	files := jsonrpcGoldenFiles()
	ts := start(t, baseConfig+goldenExtra, nil)
	replayed := 0
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.ToSlash(file), ".txtar")[len("testdata/"):], func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			for _, ex := range parseExchanges(t, ar) {
				send, err := msgpack.FromJSON([]byte(ex.send))
				if err != nil {
					continue // broken JSON has no MessagePack form: malformed MessagePack is tested below
				}
				replayed++
				want := canonical(t, ex.golden)
				status, hdr, body := ts.postMsgpack(send)
				checkMsgpackStatus(t, ex, status, hdr)
				checkMsgpackExchange(t, "http", ex, want, mpToJSON(t, body))
				got := wsBinaryRoundTrip(t, dialWS(t, ts, nil), send, want != "")
				checkMsgpackExchange(t, "websocket", ex, want, got)
			}
		})
	}
	if replayed < 30 {
		t.Fatalf("replayed only %d exchanges", replayed)
	}
}

func checkMsgpackStatus(t *testing.T, ex goldenExchange, status int, hdr http.Header) {
	t.Helper()
	wantStatus := http.StatusOK
	if strings.TrimSpace(ex.golden) == "" {
		wantStatus = http.StatusNoContent
	}
	if status != wantStatus {
		t.Errorf("exchange %d: status %d, want %d", ex.n, status, wantStatus)
	}
	if status == http.StatusOK && hdr.Get("Content-Type") != msgpack.ContentType {
		t.Errorf("exchange %d: Content-Type %q", ex.n, hdr.Get("Content-Type"))
	}
}

func checkMsgpackExchange(t *testing.T, face string, ex goldenExchange, want, got string) {
	t.Helper()
	if strings.TrimSpace(ex.spec) != "" && !jsonSubset(t, ex.spec, got) {
		t.Errorf("exchange %d over %s: got %s, want (as a subset) %s", ex.n, face, got, ex.spec)
	}
	if normalize(got) != want {
		t.Errorf("exchange %d over %s:\n got %s\nwant %s", ex.n, face, normalize(got), want)
	}
}

// wsBinaryRoundTrip is wsRoundTrip with binary messages: it sends msg and a marker
// request, both MessagePack, and returns msg's answer read back as JSON ("" for none).
// Every message the server sends must be binary.
func wsBinaryRoundTrip(t *testing.T, c *websocket.Conn, msg []byte, expectResponse bool) string {
	t.Helper()
	marker := mpFromJSON(t, `{"jsonrpc":"2.0","method":"get_data","id":"marker"}`)
	for _, m := range [][]byte{msg, marker} {
		if err := c.WriteMessage(websocket.BinaryMessage, m); err != nil {
			t.Fatal(err)
		}
	}
	var got string
	sawMarker := false
	for !sawMarker || (expectResponse && got == "") {
		m := wsReadBinary(t, c, 5*time.Second)
		if strings.Contains(m, `"id":"marker"`) && !sawMarker && !strings.HasPrefix(m, "[") {
			sawMarker = true
			continue
		}
		if got != "" {
			t.Fatalf("a second response: %s", m)
		}
		got = m
	}
	if !expectResponse {
		_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, extra, err := c.ReadMessage(); err == nil {
			t.Fatalf("unexpected message %x", extra)
		}
	}
	return got
}

// wsReadBinary reads one message, which must be binary, and returns it as JSON.
func wsReadBinary(t *testing.T, c *websocket.Conn, timeout time.Duration) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	mt, b, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("reading: %v", err)
	}
	if mt != websocket.BinaryMessage {
		t.Fatalf("a text message answered MessagePack: %s", b)
	}
	return mpToJSON(t, b)
}

func mustHex(t *testing.T, h string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(h, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMsgpackHTTP covers what only MessagePack bodies have: malformed documents, values
// without a JSON form, the MessagePack forms of the limits, and encoded refusals.
func TestMsgpackHTTP(t *testing.T) {
	const maxBody = 64
	ts := start(t, baseConfig+goldenExtra+"  max_body_bytes: 64\n", nil)
	// {"jsonrpc":"2.0","method":"get_data","id":1} is 40 bytes of MessagePack; a bin member
	// in params pads it to the body limit.
	call := func(pad int) []byte {
		t.Helper()
		b, err := vmsgpack.Marshal(map[string]any{"jsonrpc": "2.0", "method": "update", "params": []any{make([]byte, pad)}, "id": 1})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	base := len(call(0))
	exact := call(maxBody - base)
	if len(exact) != maxBody {
		t.Fatalf("exact body is %d bytes", len(exact))
	}
	tests := []struct {
		name   string
		body   []byte
		header []string
		status int
		want   string // the answer read back as JSON, trace ids normalized
	}{
		{"body at the limit is served", exact, nil, 200, `{"jsonrpc":"2.0","result":null,"id":1}`},
		{"body one byte over is refused in MessagePack", append(bytes.Clone(exact[:len(exact)-1]), 0, 0), nil, 413,
			`{"jsonrpc":"2.0","error":{"code":-32027,"message":"Request body too large","data":{"limit":"max_body_bytes","max":64,"trace_id":"TRACE"}},"id":null}`},
		{"never-used byte", mustHex(t, "c1"), nil, 200,
			`{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error","data":{"offset":0,"reason":"invalid MessagePack: byte 0xc1 is never used","trace_id":"TRACE"}},"id":null}`},
		{"truncated map", mustHex(t, "82 a7 6a736f6e727063"), nil, 200, ""},
		{"data after the value", append(mpFromJSON(t, `{"jsonrpc":"2.0","method":"get_data","id":1}`), 0xc0), nil, 200, ""},
		{"map key that is not a str", mustHex(t, "81 01 02"), nil, 200, ""},
		{"extension other than timestamps", mustHex(t, "d4 05 00"), nil, 200, ""},
		{"NaN has no JSON form", mustHex(t, "cb 7ff8000000000000"), nil, 200, ""},
		{"empty body", nil, nil, 200, ""},
		{"bad deadline header, answered in MessagePack", mpFromJSON(t, `{"jsonrpc":"2.0","method":"get_data","id":1}`),
			[]string{"X-Deadline-Ms", "soon"}, 400,
			`{"jsonrpc":"2.0","error":{"code":-32600,"message":"X-Deadline-Ms must be a positive integer (epoch milliseconds)","data":{"trace_id":"TRACE"}},"id":null}`},
		{"unverifiable bearer, answered in MessagePack", mpFromJSON(t, `{"jsonrpc":"2.0","method":"get_data","id":1}`),
			[]string{"Authorization", "Bearer abc"}, 401, ""},
		{"media type parameters are allowed", mpFromJSON(t, `{"jsonrpc":"2.0","method":"get_data","id":1}`),
			[]string{"Content-Type", "application/x-msgpack; foo=bar"}, 200, `{"jsonrpc":"2.0","result":["hello",5],"id":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, hdr, body := ts.postMsgpack(tt.body, tt.header...)
			if status != tt.status {
				t.Fatalf("status %d, want %d: %x", status, tt.status, body)
			}
			if ct := hdr.Get("Content-Type"); ct != msgpack.ContentType {
				t.Fatalf("Content-Type %q", ct)
			}
			got := normalize(mpToJSON(t, body))
			switch {
			case tt.want != "":
				if got != tt.want+"\n" {
					t.Fatalf("got  %s\nwant %s", got, tt.want)
				}
			case tt.status == 401:
				if !strings.Contains(got, `"code":4001`) || hdr.Get("WWW-Authenticate") == "" {
					t.Fatalf("got %s", got)
				}
			default:
				if !strings.Contains(got, `"code":-32700`) || !strings.Contains(got, `"reason":"invalid MessagePack: `) {
					t.Fatalf("got %s, want a parse error", got)
				}
			}
		})
	}
}

// TestMsgpackLimitsAtTheirEdges checks each decoder limit on the MessagePack side of the
// transcoder, where lengths are MessagePack's: a str or bin of max_string_bytes passes, one
// byte more is refused with the JSON decoder's error; likewise nesting at max_depth.
func TestMsgpackLimitsAtTheirEdges(t *testing.T) {
	ts := start(t, baseConfig+goldenExtra, nil)
	limitErr := func(limit string, maxValue int) string {
		return `{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request","data":{"limit":"` + limit +
			`","max":` + strconv.Itoa(maxValue) + `,"reason":"limit exceeded","trace_id":"TRACE"}},"id":null}` + "\n"
	}
	nested := func(depth int) any { // params nested so that the whole request is depth deep
		var v any = 1
		for range depth - 1 {
			v = []any{v}
		}
		return v
	}
	tests := []struct {
		name   string
		params any
		want   string
	}{
		{"str at max_string_bytes", []any{strings.Repeat("é", 32)}, `{"jsonrpc":"2.0","result":null,"id":1}` + "\n"},
		{"str one byte over", []any{strings.Repeat("é", 32) + "x"}, limitErr("max_string_bytes", 64)},
		{"bin one byte over", []any{make([]byte, 65)}, limitErr("max_string_bytes", 64)},
		{"nesting at max_depth", nested(8), `{"jsonrpc":"2.0","result":null,"id":1}` + "\n"},
		{"nesting one over", nested(9), limitErr("max_depth", 8)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := vmsgpack.Marshal(map[string]any{"jsonrpc": "2.0", "method": "update", "params": tt.params, "id": 1})
			if err != nil {
				t.Fatal(err)
			}
			_, _, out := ts.postMsgpack(body)
			if got := normalize(mpToJSON(t, out)); got != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// hugeNumber is a target whose result MessagePack cannot carry (a number beyond a double).
type hugeNumber struct{}

func (hugeNumber) Name() string { return "huge" }

func (hugeNumber) Invoke(context.Context, *gateway.Call) (*gateway.Result, error) {
	return gateway.NewResult([]byte(`1e400`)), nil
}

func TestMsgpackResponseWithoutMsgpackForm(t *testing.T) {
	ts := start(t, baseConfig, map[string]gateway.Target{"test.huge": hugeNumber{}})
	body := mpFromJSON(t, `{"jsonrpc":"2.0","method":"test.huge","id":1}`)
	want := `{"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error","data":{"reason":"the response has no MessagePack form","trace_id":"TRACE"}},"id":null}` + "\n"
	status, _, out := ts.postMsgpack(body)
	if got := normalize(mpToJSON(t, out)); status != http.StatusOK || got != want {
		t.Fatalf("http: %d %s", status, got)
	}
	c := dialWS(t, ts, nil)
	if err := c.WriteMessage(websocket.BinaryMessage, body); err != nil {
		t.Fatal(err)
	}
	if got := normalize(wsReadBinary(t, c, 5*time.Second)); got != want {
		t.Fatalf("websocket: %s", got)
	}
	// The same result in JSON is passed through as it came.
	if _, _, out := ts.post(`{"jsonrpc":"2.0","method":"test.huge","id":1}`); out != `{"jsonrpc":"2.0","result":1e400,"id":1}` {
		t.Fatalf("json: %s", out)
	}
}

// TestWebSocketEncodingPerMessage mixes text and binary messages on one connection: each
// answer comes in the kind of message its request came in.
func TestWebSocketEncodingPerMessage(t *testing.T) {
	ts := start(t, baseConfig, nil)
	c := dialWS(t, ts, nil)
	send := func(mt int, b []byte) {
		t.Helper()
		if err := c.WriteMessage(mt, b); err != nil {
			t.Fatal(err)
		}
	}
	send(websocket.BinaryMessage, mpFromJSON(t, `{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":"b"}`))
	if got := wsReadBinary(t, c, 5*time.Second); got != `{"jsonrpc":"2.0","result":19,"id":"b"}` {
		t.Fatalf("binary: %s", got)
	}
	send(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":"t"}`))
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	mt, b, err := c.ReadMessage()
	if err != nil || mt != websocket.TextMessage || string(b) != `{"jsonrpc":"2.0","result":19,"id":"t"}` {
		t.Fatalf("text: %d %s %v", mt, b, err)
	}
	send(websocket.BinaryMessage, mustHex(t, "c1"))
	if got := wsReadBinary(t, c, 5*time.Second); !strings.Contains(got, `"code":-32700`) {
		t.Fatalf("malformed: %s", got)
	}
	send(websocket.BinaryMessage, mpFromJSON(t, `[{"jsonrpc":"2.0","method":"subtract","params":[5,3],"id":1},{"jsonrpc":"2.0","method":"update","params":[1]}]`))
	if got := wsReadBinary(t, c, 5*time.Second); got != `[{"jsonrpc":"2.0","result":2,"id":1}]` {
		t.Fatalf("batch: %s", got)
	}
	// A control message in MessagePack is answered in MessagePack.
	send(websocket.BinaryMessage, mpFromJSON(t, `{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"nope"},"id":"c"}`))
	if got := wsReadBinary(t, c, 5*time.Second); !strings.Contains(got, `"code":-32602`) || !strings.Contains(got, `"id":"c"`) {
		t.Fatalf("control: %s", got)
	}
}

// TestMsgpackWebSocketMessageLimit checks websocket.max_message_bytes on binary messages:
// at the limit a message is served, one byte over the connection is closed (1009).
func TestMsgpackWebSocketMessageLimit(t *testing.T) {
	ts := start(t, strings.Replace(baseConfig, "websocket: {}\n", "websocket: {max_message_bytes: 64}\n", 1), nil)
	msg := func(n int) []byte {
		b, err := vmsgpack.Marshal(map[string]any{"jsonrpc": "2.0", "method": "update", "params": []any{strings.Repeat("x", n)}, "id": 1})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	n := 64 - len(msg(0)) + 1 // +1: the str header is one byte either way (fixstr up to 31, str8 beyond)
	exact := msg(n)
	for len(exact) > 64 {
		n--
		exact = msg(n)
	}
	if len(exact) != 64 {
		t.Fatalf("exact message is %d bytes", len(exact))
	}
	c := dialWS(t, ts, nil)
	if err := c.WriteMessage(websocket.BinaryMessage, exact); err != nil {
		t.Fatal(err)
	}
	if got := wsReadBinary(t, c, 5*time.Second); got != `{"jsonrpc":"2.0","result":null,"id":1}` {
		t.Fatalf("at the limit: %s", got)
	}
	if err := c.WriteMessage(websocket.BinaryMessage, msg(n+1)); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err := c.ReadMessage()
	if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Fatalf("one byte over: %v, want close 1009", err)
	}
}
