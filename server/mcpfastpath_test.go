package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/demo"
)

// fastInitializeBody opens a session whose client has neither sampling nor elicitation,
// which the face's tools/call fast path serves.
const fastInitializeBody = `{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":"2025-06-18",` +
	`"capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"agent","version":"9"}},"id":1}`

// wireResponse is what a client receives for one POST: the status, the headers (Date
// aside; the trace id's value masked) and the body (trace ids masked).
type wireResponse struct {
	status int
	header string
	body   string
}

var traceIDs = regexp.MustCompile(`"trace_id":"[0-9a-f]+"`)

func readWire(t *testing.T, resp *http.Response) wireResponse {
	t.Helper()
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for k, v := range resp.Header {
		switch k {
		case "Date":
			continue
		case "X-Trace-Id":
			v = []string{"<trace>"}
		}
		lines = append(lines, k+": "+strings.Join(v, ","))
	}
	if len(resp.TransferEncoding) > 0 {
		lines = append(lines, "Transfer-Encoding: "+strings.Join(resp.TransferEncoding, ","))
	}
	slices.Sort(lines)
	return wireResponse{status: resp.StatusCode, header: strings.Join(lines, "\n"),
		body: traceIDs.ReplaceAllString(string(b), `"trace_id":"<trace>"`)}
}

// forgeExpiredSessionID is a session ID signed with key but issued long ago.
func forgeExpiredSessionID(key string) string {
	payload := make([]byte, 16+8+1+8, 16+8+1+8+10)
	_, _ = rand.Read(payload[:16])
	binary.BigEndian.PutUint64(payload[16:], uint64(time.Now().Add(-1000*time.Hour).UnixMilli()))
	payload = append(payload, "2025-06-18"...)
	m := hmac.New(sha256.New, []byte(key))
	m.Write(payload)
	b64 := base64.RawURLEncoding
	return b64.EncodeToString(payload) + "." + b64.EncodeToString(m.Sum(nil))
}

// TestMCPToolCallFastPathWire: the same tools/call reaches a client as the same bytes —
// status, headers, framing, body — whether the face's fast path serves it or mcp-go's
// server does (the fast path switched off), over a JSON response, an event stream with
// progress or log messages, a tool error, an unknown tool, invalid params, an expired or
// unknown session, a result that would need input from the client, and a cancelled call.
func TestMCPToolCallFastPathWire(t *testing.T) {
	ts := startWith(t, faceConfig("127.0.0.1:0", demoUpstream(t, demo.MCPOptions{StepDelay: 20 * time.Millisecond}), "session_key: "+testSessionKey), Options{})
	slow := startWith(t, faceConfig("127.0.0.1:0", demoUpstream(t, demo.MCPOptions{StepDelay: 5 * time.Second}), "session_key: "+testSessionKey), Options{})
	waitForTools(t, ts)
	waitForTools(t, slow)
	hc := httpClient(t)

	post := func(url, sid, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	session := func(url string) string {
		t.Helper()
		resp := post(url, "", fastInitializeBody)
		w := readWire(t, resp)
		sid := resp.Header.Get("Mcp-Session-Id")
		if w.status != http.StatusOK || sid == "" {
			t.Fatalf("initialize: %d %s", w.status, w.body)
		}
		return sid
	}
	callBody := func(id, params string) string {
		return `{"jsonrpc":"2.0","method":"tools/call","params":` + params + `,"id":` + id + `}`
	}

	tests := []struct {
		name  string
		ts    *testServer
		sid   func(url string) string // the session to call on; nil: a fresh one
		setup string                  // a message sent on the session first
		// sticky, when set, has the catalog published again (list_changed to every session)
		// and that notification delivered on a tools/list first: mcp-go answers every later
		// POST of the session as an event stream.
		sticky bool
		body   string
		// cancel, when set, is sent as notifications/cancelled while the call runs.
		cancel string
		fast   bool // the fast path serves it
		want   string
	}{
		{name: "json response", body: callBody("7", `{"name":"test_simple_text","arguments":{}}`), fast: true,
			want: "This is a simple text response for testing."},
		{name: "string id, no arguments", body: callBody(`"call-1"`, `{"name":"test_simple_text"}`), fast: true, want: `"id":"call-1"`},
		{name: "event stream with progress", body: callBody("8", `{"name":"test_tool_with_progress","arguments":{},"_meta":{"progressToken":"tok"}}`),
			fast: true, want: `"progress":50`},
		{name: "event stream with log messages", setup: `{"jsonrpc":"2.0","method":"logging/setLevel","params":{"level":"info"},"id":2}`,
			body: callBody("9", `{"name":"test_tool_with_logging","arguments":{}}`), fast: true, want: "notifications/message"},
		{name: "a session mcp-go answers with streams", sticky: true, body: callBody("19", `{"name":"test_simple_text","arguments":{}}`),
			fast: true, want: "event: message"},
		{name: "a refusal on a session mcp-go answers with streams", sticky: true,
			body: callBody("20", `{"name":"test_sampling","arguments":{"prompt":7}}`), fast: true, want: `"code":-32603`},
		{name: "tool error", body: callBody("10", `{"name":"test_error_handling","arguments":{}}`), fast: true, want: `"isError":true`},
		{name: "unknown tool", body: callBody("11", `{"name":"no_such_tool","arguments":{}}`), want: `"error"`},
		{name: "arguments not an object", body: callBody("12", `{"name":"test_simple_text","arguments":"x"}`), want: `"error"`},
		{name: "arguments against the schema", body: callBody("13", `{"name":"test_sampling","arguments":{"prompt":7}}`), fast: true, want: `"error"`},
		{name: "input required from a client without elicitation", body: callBody("14", `{"name":"test_elicitation","arguments":{"message":"who?"}}`),
			fast: true, want: `"id":14`},
		{name: "expired session", sid: func(string) string { return forgeExpiredSessionID(testSessionKey) },
			body: callBody("15", `{"name":"test_simple_text","arguments":{}}`), want: "Unknown or terminated MCP session"},
		{name: "unknown session", sid: func(string) string { return "bogus" },
			body: callBody("16", `{"name":"test_simple_text","arguments":{}}`), want: "Unknown or terminated MCP session"},
		{name: "cancelled", ts: slow, body: callBody("17", `{"name":"test_reconnection","arguments":{}}`),
			cancel: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":17,"reason":"enough"}}`, fast: true, want: `"id":17`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := tt.ts
			if srv == nil {
				srv = ts
			}
			url := srv.base + "/mcp"
			run := func(fast bool) wireResponse {
				srv.mcp.SetFastToolCalls(fast)
				defer srv.mcp.SetFastToolCalls(true)
				sid := session(url)
				if tt.sid != nil {
					sid = tt.sid(url)
				}
				if tt.setup != "" {
					if w := readWire(t, post(url, sid, tt.setup)); w.status != http.StatusOK {
						t.Fatalf("setup: %d %s", w.status, w.body)
					}
				}
				if tt.sticky {
					srv.mcp.Refresh()
					if w := readWire(t, post(url, sid, toolsListBody)); !strings.Contains(w.body, "notifications/tools/list_changed") {
						t.Fatalf("tools/list after a publish: %d %s", w.status, w.body)
					}
				}
				before := srv.mcp.FastToolCalls()
				if tt.cancel != "" {
					go func() {
						time.Sleep(300 * time.Millisecond)
						_ = readWire(t, post(url, sid, tt.cancel))
					}()
				}
				w := readWire(t, post(url, sid, tt.body))
				if served := srv.mcp.FastToolCalls() - before; fast && served != map[bool]uint64{true: 1, false: 0}[tt.fast] {
					t.Errorf("fast path served %d calls, want it to serve it: %v", served, tt.fast)
				}
				return w
			}
			viaFast, viaMCPGo := run(true), run(false)
			if viaFast != viaMCPGo {
				t.Errorf("the fast path answers\n%d\n%s\n\n%s\nmcp-go answers\n%d\n%s\n\n%s",
					viaFast.status, viaFast.header, viaFast.body, viaMCPGo.status, viaMCPGo.header, viaMCPGo.body)
			}
			if !strings.Contains(viaFast.body, tt.want) {
				t.Errorf("response lacks %s: %d %s", tt.want, viaFast.status, viaFast.body)
			}
		})
	}
}
