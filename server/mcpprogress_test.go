package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/state"
)

// burstSteps is how many progress notifications the burst upstream's tool sends.
const burstSteps = 20

// burstUpstream is an mcp-go server (2025-11-25, sessions) whose tool "burst" answers a
// tools/call with a token as one event stream, written by the test itself so that its order
// is certain: burstSteps progress notifications, an error-level log message (which a
// session's default level lets through), then the result.
func burstUpstream(t *testing.T) string {
	t.Helper()
	srv := mcpserver.NewMCPServer("burst", "1", mcpserver.WithToolCapabilities(false), mcpserver.WithLogging())
	srv.AddTool(mcp.NewTool("burst"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("burst without a token"), nil
	})
	h := mcpserver.NewStreamableHTTPServer(srv)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Method == http.MethodPost {
			body, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		var call struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Meta struct {
					ProgressToken any `json:"progressToken"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &call) != nil || call.Method != string(mcp.MethodToolsCall) || call.Params.Meta.ProgressToken == nil {
			h.ServeHTTP(w, r)
			return
		}
		token, _ := json.Marshal(call.Params.Meta.ProgressToken)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for i := 1; i <= burstSteps; i++ {
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":%s,\"progress\":%d,\"total\":%d}}\n\n", token, i, burstSteps)
		}
		fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"error\",\"logger\":\"burst\",\"data\":\"burst log\"}}\n\n")
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"burst done\"}]}}\n\n", call.ID)
	}))
	t.Cleanup(func() {
		_ = h.Shutdown(context.Background())
		hs.Close()
	})
	return hs.URL + "/mcp"
}

// sessionPost sends one JSON-RPC message of session sid (none when empty) to /mcp as
// alice at protocol 2025-11-25, and returns the status, the session ID answered and the
// body.
func sessionPost(t *testing.T, hc *http.Client, url, sid, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-API-Key", "alice-key")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", mcp.ProtocolVersion20251125)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

// openGET opens session sid's GET stream on url as alice; it stays open until the test
// ends. The stream is registered on the replica once its headers are answered.
func openGET(t *testing.T, url, sid string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("X-API-Key", "alice-key")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", mcp.ProtocolVersion20251125)
	resp, err := httpClient(t).Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("GET stream: %d", resp.StatusCode)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		_, _ = io.Copy(io.Discard, resp.Body)
	}()
	t.Cleanup(func() {
		cancel()
		<-read
		_ = resp.Body.Close()
	})
}

// sseMessages returns the data of each event of an event-stream body.
func sseMessages(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, data)
		}
	}
	return out
}

// TestMCPCallNotificationsOnPOSTStream: the progress notifications and log messages of a
// tools/call all reach the client on that call's POST response, in order and before the
// result, whichever of two replicas (one store) serves the call, whether or not the
// session's GET stream is open, and on which replica: on the replica that initialized the
// session and holds it (the fast path for a client without sampling, mcp-go's server for
// one with it), on the other one (a session restored from the store), and on one where a
// GET stream of the session is open — whose queue mcp-go shares with the POST response.
func TestMCPCallNotificationsOnPOSTStream(t *testing.T) {
	kv := state.NewEmbedded(state.EmbeddedOptions{})
	t.Cleanup(func() { _ = kv.Close() })
	yaml := affinityConfig(burstUpstream(t), "protocol_versions: [2025-11-25]")
	a := startOptions(t, mustParse(t, yaml), Options{State: kv}, nil)
	b := startOptions(t, mustParse(t, yaml), Options{State: kv}, nil)
	waitForTools(t, a)
	waitForTools(t, b)
	replicas := map[string]*testServer{"A": a, "B": b}
	for _, caps := range []string{`{}`, `{"sampling":{},"elicitation":{}}`} {
		for _, tt := range []struct{ name, get, call string }{
			{"call on the initializing replica", "", "A"},
			{"call on the other replica", "", "B"},
			{"call on the other replica, GET stream on the initializing one", "A", "B"},
			{"call on the other replica, GET stream on it", "B", "B"},
			{"call and GET stream on the initializing replica", "A", "A"},
		} {
			t.Run(caps+"/"+tt.name, func(t *testing.T) {
				hc := httpClient(t)
				init := `{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` + caps +
					`,"clientInfo":{"name":"progress-test","version":"1"}},"id":1}`
				status, sid, body := sessionPost(t, hc, a.base+"/mcp", "", init)
				if status != http.StatusOK || sid == "" {
					t.Fatalf("initialize: %d %s", status, body)
				}
				if tt.get != "" {
					openGET(t, replicas[tt.get].base+"/mcp", sid)
				}
				for i := range 3 {
					call := fmt.Sprintf(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"burst","arguments":{},"_meta":{"progressToken":"tok-%d"}},"id":%d}`, i, 10+i)
					status, _, body := sessionPost(t, hc, replicas[tt.call].base+"/mcp", sid, call)
					if status != http.StatusOK {
						t.Fatalf("tools/call %d: %d %s", i, status, body)
					}
					wantBurst(t, i, body)
				}
			})
		}
	}
	// A 2026-07-28 caller has no session: mcp-go's server serves its call, as a multi
	// round-trip call when it declared sampling or elicitation.
	for _, caps := range []string{`{}`, `{"sampling":{},"elicitation":{}}`} {
		for name, ts := range replicas {
			t.Run("2026-07-28 "+caps+" on "+name, func(t *testing.T) {
				hc := httpClient(t)
				for i := range 3 {
					call := fmt.Sprintf(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"burst","arguments":{},"_meta":{"progressToken":"tok-%d",`+
						`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"progress-test","version":"1"},`+
						`"io.modelcontextprotocol/clientCapabilities":%s,"io.modelcontextprotocol/logLevel":"debug"}},"id":%d}`, i, caps, 10+i)
					req, err := http.NewRequest(http.MethodPost, ts.base+"/mcp", strings.NewReader(call))
					if err != nil {
						t.Fatal(err)
					}
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					req.Header.Set("X-API-Key", "alice-key")
					req.Header.Set("Mcp-Protocol-Version", mcp.ProtocolVersion20260728)
					req.Header.Set("Mcp-Method", "tools/call")
					req.Header.Set("Mcp-Name", "burst")
					resp, err := hc.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					b, _ := io.ReadAll(resp.Body)
					_ = resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						t.Fatalf("tools/call %d: %d %s", i, resp.StatusCode, b)
					}
					wantBurst(t, i, string(b))
				}
			})
		}
	}
}

// wantBurst checks the answer to the burst tools/call of id 10+i with token tok-i: every
// progress notification in order, the log message, then the result (whose _meta and
// resultType a 2026-07-28 caller gets too).
func wantBurst(t *testing.T, i int, body string) {
	t.Helper()
	var want []string
	for step := 1; step <= burstSteps; step++ {
		want = append(want, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":%d,"progressToken":"tok-%d","total":%d}}`, step, i, burstSteps))
	}
	want = append(want, `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"burst log","level":"error","logger":"burst"}}`)
	got := sseMessages(t, body)
	if n := len(got); n > 0 && strings.HasPrefix(got[n-1], fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{`, 10+i)) &&
		strings.Contains(got[n-1], `"content":[{"type":"text","text":"burst done"}]`) {
		got[n-1] = "the result"
	}
	want = append(want, "the result")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("tools/call %d answered %d events, want %d progress notifications, the log message and the result in order:\n%s",
			i, len(got), burstSteps, strings.Join(got, "\n"))
	}
}
