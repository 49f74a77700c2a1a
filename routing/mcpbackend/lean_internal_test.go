package mcpbackend

import (
	"bufio"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

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
