package mcpbackend

import (
	"bufio"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestReadSSE(t *testing.T) {
	long := strings.Repeat("x", 10000)
	tests := []struct {
		name, in string
		stopAt   int // fn returns true on this event (1-based); 0: never
		want     []string
		lastID   string
		retry    time.Duration
	}{
		{name: "one event", in: "data: {}\n\n", want: []string{"{}"}},
		{name: "crlf and fields", in: "event: message\r\nid: 7\r\nretry: 10\r\n: comment\r\ndata:a\r\n\r\n", want: []string{"a"}, lastID: "7", retry: 10 * time.Millisecond},
		{name: "multi-line data", in: "data: a\ndata: b\ndata:c\n\n", want: []string{"a\nb\nc"}},
		{name: "empty first data line", in: "data:\ndata: b\n\n", want: []string{"b"}},
		{name: "no data: not dispatched", in: "event: ping\n\n: keep-alive\n\ndata: x\n\n", want: []string{"x"}},
		{name: "cut short by the end", in: "data: a\n\ndata: b", want: []string{"a", "b"}},
		{name: "pending data at the end", in: "data: a\ndata: b\n", want: []string{"a\nb"}},
		{name: "stops when told", in: "data: 1\n\ndata: 2\n\ndata: 3\n\n", stopAt: 2, want: []string{"1", "2"}},
		{name: "a line longer than the buffer", in: "data: " + long + "\n\n", want: []string{long}},
		{name: "empty stream", in: "", want: nil},
		{name: "ids and retry recorded", in: "id: 1\ndata: a\n\nid: 2\nretry: 250\n\nid: x\x00\nretry: 1e3\ndata: b", want: []string{"a", "b"}, lastID: "2", retry: 250 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			cursor := &sseCursor{}
			err := readSSE(bufio.NewReaderSize(strings.NewReader(tc.in), 16), cursor, func(data []byte) bool {
				got = append(got, string(data))
				return len(got) == tc.stopAt
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("events %q, want %q", got, tc.want)
			}
			if cursor.lastEventID != tc.lastID || cursor.retry != tc.retry {
				t.Fatalf("cursor %+v, want last ID %q and retry %s", cursor, tc.lastID, tc.retry)
			}
		})
	}
}

func TestParseLeanMessage(t *testing.T) {
	tests := []struct {
		name, in           string
		notification, req  bool
		result, errMessage string
		bad                bool
	}{
		{name: "result", in: `{"jsonrpc":"2.0","id":3,"result":{"content":[]}}`, result: `{"content":[]}`},
		{name: "error", in: `{"jsonrpc":"2.0","id":"a","error":{"code":-32602,"message":"bad"}}`, errMessage: "bad"},
		{name: "notification", in: `{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`, notification: true},
		{name: "notification with a null id", in: `{"jsonrpc":"2.0","id":null,"method":"notifications/message"}`, notification: true},
		{name: "request", in: `{"jsonrpc":"2.0","id":"srv-1","method":"roots/list"}`, req: true},
		{name: "not an object", in: `[1]`, bad: true},
		{name: "null", in: `null`, bad: true},
		{name: "not JSON", in: `data`, bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := parseLeanMessage([]byte(tc.in))
			if tc.bad {
				if err == nil {
					t.Fatalf("parsed %+v", m)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.isNotification() != tc.notification || m.isRequest() != tc.req || string(m.Result) != tc.result {
				t.Fatalf("%+v: notification %v request %v", m, m.isNotification(), m.isRequest())
			}
			if (m.Error != nil) != (tc.errMessage != "") || m.Error != nil && m.Error.Message != tc.errMessage {
				t.Fatalf("error %+v", m.Error)
			}
		})
	}
}

// TestLeanBody checks the request the lean path builds against the params mcp-go's client
// would send for the same call.
func TestLeanBody(t *testing.T) {
	legacy := &leanSession{}
	l := &leanSession{
		modern:   true,
		metaHead: []byte(`"` + mcp.MetaKeyClientCapabilities + `":{},"` + mcp.MetaKeyClientInfo + `":{"name":"gatehouse","version":"1"}`),
		metaTail: []byte(`"` + mcp.MetaKeyProtocolVersion + `":"2026-07-28"`),
	}
	tests := []struct {
		name string
		l    *leanSession
		call leanCall
		want string
	}{
		{name: "handshake revision", l: legacy, call: leanCall{name: "echo", args: json.RawMessage(`{}`)}, want: `{"arguments":{},"name":"echo"}`},
		{name: "handshake revision with progress", l: legacy, call: leanCall{name: "echo", token: "gatehouse-1"}, want: `{"_meta":{"progressToken":"gatehouse-1"},"name":"echo"}`},
		{name: "bare", call: leanCall{name: "echo"},
			want: `{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"gatehouse","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"echo"}`},
		{name: "everything", call: leanCall{name: "a<b\"c", args: json.RawMessage(`{"x": [1, 2]}`), token: "gatehouse-9", logLevel: "debug"},
			want: `{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"gatehouse","version":"1"},"io.modelcontextprotocol/logLevel":"debug","io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":"gatehouse-9"},"arguments":{"x":[1,2]},"name":"a\u003cb\"c"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var req struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      int64           `json:"id"`
				Method  string          `json:"method"`
				Params  json.RawMessage `json:"params"`
			}
			ls := tc.l
			if ls == nil {
				ls = l
			}
			body := ls.body(&tc.call, leanIDBase+1)
			if err := json.Unmarshal(body, &req); err != nil {
				t.Fatalf("%s: %v", body, err)
			}
			if req.JSONRPC != "2.0" || req.ID != leanIDBase+1 || req.Method != "tools/call" {
				t.Fatalf("envelope %s", body)
			}
			// Compared as encoding/json would write both: the same members and values.
			var got, want any
			_ = json.Unmarshal(req.Params, &got)
			_ = json.Unmarshal([]byte(tc.want), &want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("params\n%s\nwant\n%s", req.Params, tc.want)
			}
		})
	}
}

func FuzzReadSSE(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	fuzzseed.AddString(f, fuzzseed.SSE)
	for _, s := range []string{"data: {}\n\n", "data: a\r\ndata: b\r\n\r\ndata: c", ": x\nevent: e\nid: 1\n\n", "data:\n\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var events []string
		if err := readSSE(bufio.NewReaderSize(strings.NewReader(in), 16), &sseCursor{}, func(data []byte) bool {
			events = append(events, string(data))
			return false
		}); err != nil {
			t.Fatal(err) // a string reader fails only with io.EOF, which ends the stream
		}
		n := 0
		for _, e := range events {
			if e == "" {
				t.Fatal("an event without data was dispatched")
			}
			n += len(e)
		}
		if n > len(in) {
			t.Fatalf("%d bytes of data out of %d in", n, len(in))
		}
	})
}

func FuzzParseLeanMessage(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	fuzzseed.Add(f, fuzzseed.MCPResponse, fuzzseed.MCPRequest)
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"method":"m"}`, `{"id":"x","method":"m"}`, `null`, `{"error":{"code":1,"message":"m"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := parseLeanMessage(in)
		if err != nil {
			return
		}
		if m.isNotification() && m.isRequest() {
			t.Fatal("both a notification and a request")
		}
		if len(m.Result) > 0 && !json.Valid(m.Result) {
			t.Fatalf("result %q is not JSON", m.Result)
		}
	})
}

// decodeLeanStd is what parseLeanMessage returns without its fast path.
func decodeLeanStd(in []byte) (*leanMessage, error) {
	m := &leanMessage{}
	return m, json.Unmarshal(in, m)
}

// TestScanLeanResult checks the fast read of a call's answer against encoding/json on
// the bodies it takes, and that it leaves the others to encoding/json.
func TestScanLeanResult(t *testing.T) {
	tests := []struct {
		name string
		in   string
		fast bool // scanLeanResult takes it
	}{
		{name: "mcp-go's answer", in: `{"jsonrpc":"2.0","id":1099511627777,"result":{"content":[{"type":"text","text":"a\"b\\c}"}]}}` + "\n", fast: true},
		{name: "members in another order, white space", in: " {\n\t\"result\" : [1, {\"x\": \"]}\"}] ,\"id\": \"s-1\", \"jsonrpc\":\"2.0\"}\r\n", fast: true},
		{name: "string result", in: `{"id":1,"result":"x"}`, fast: true},
		{name: "number result", in: `{"result":-1.5e3,"id":1}`, fast: true},
		{name: "unknown members", in: `{"id":1,"extra":{"id":2,"result":3},"result":true}`, fast: true},
		{name: "a repeated member: the last counts", in: `{"id":1,"result":1,"result":{"a":2}}`, fast: true},
		{name: "error", in: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}`},
		{name: "result and error", in: `{"id":1,"result":{},"error":{"code":1,"message":"m"}}`},
		{name: "a request", in: `{"id":1,"method":"roots/list","result":{}}`},
		{name: "a case-folded name", in: `{"id":1,"Result":{}}`},
		{name: "a case-folded name after the exact one", in: `{"id":1,"result":{},"RESULT":{"x":1}}`},
		{name: "a case-folded id", in: `{"ID":1,"result":{}}`},
		{name: "an escaped name", in: `{"id":1,"res\u0075lt":{}}`},
		{name: "a null id", in: `{"id":null,"result":{}}`},
		{name: "no id", in: `{"result":{}}`},
		{name: "a null result", in: `{"id":1,"result":null}`},
		{name: "no result", in: `{"id":1}`},
		{name: "invalid JSON", in: `{"id":1,"result":{}`},
		{name: "trailing data", in: `{"id":1,"result":{}} {}`},
		{name: "not an object", in: `[{"id":1,"result":{}}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := scanLeanResult([]byte(tc.in))
			if ok != tc.fast {
				t.Fatalf("taken %v, want %v: %+v", ok, tc.fast, m)
			}
			if !ok {
				return
			}
			want, err := decodeLeanStd([]byte(tc.in))
			if err != nil {
				t.Fatalf("encoding/json: %v", err)
			}
			if !reflect.DeepEqual(m, want) {
				t.Fatalf("got %+v (result %s), encoding/json %+v (result %s)", m, m.Result, want, want.Result)
			}
		})
	}
}

// FuzzScanLeanResult: every body the fast read takes, encoding/json reads the same.
func FuzzScanLeanResult(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	fuzzseed.Add(f, fuzzseed.MCPResult)
	for _, b := range fuzzseed.Members(f, "result", fuzzseed.MCPResponse) {
		f.Add(b)
	}
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"id":"x","result":[1,"]"]}`, `{"result":"\"}","id":2}`,
		`{"id":1,"Result":{}}`, `{"id":1,"result":{},"error":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		m, ok := scanLeanResult(in)
		if !ok {
			return
		}
		want, err := decodeLeanStd(in)
		if err != nil {
			t.Fatalf("taken, but encoding/json refuses it: %v", err)
		}
		if !reflect.DeepEqual(m, want) {
			t.Fatalf("got %+v, encoding/json %+v", m, want)
		}
	})
}

// TestLeanHeaderFor checks the shared per-tool headers of a call without hop headers.
func TestLeanHeaderFor(t *testing.T) {
	for _, setName := range []bool{true, false} {
		l := &leanSession{header: http.Header{"Mcp-Method": {"tools/call"}, "X-Test": {"1"}}, setName: setName}
		a, b := l.headerFor("alpha"), l.headerFor("beta")
		if again := l.headerFor("alpha"); reflect.ValueOf(again).UnsafePointer() != reflect.ValueOf(a).UnsafePointer() {
			t.Fatalf("setName %v: a second call of the tool built its headers again", setName)
		}
		for name, h := range map[string]http.Header{"alpha": a, "beta": b} {
			want := ""
			if setName {
				want = name
			}
			if got := h.Get(mcp.HeaderName); got != want {
				t.Errorf("setName %v: %s: Mcp-Name %q, want %q", setName, name, got, want)
			}
			if h.Get("X-Test") != "1" || h.Get("Mcp-Method") != "tools/call" {
				t.Errorf("setName %v: %s: %v lacks the session's headers", setName, name, h)
			}
		}
		if len(l.header) != 2 || l.header.Get(mcp.HeaderName) != "" {
			t.Errorf("setName %v: the session's headers changed: %v", setName, l.header)
		}
	}
}
