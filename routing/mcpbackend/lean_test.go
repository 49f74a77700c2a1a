package mcpbackend_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// leanPost is one POST a leanServer received.
type leanPost struct {
	method, tool string
	header       http.Header
	meta         map[string]any
	state        bool // params.requestState present
	id           json.RawMessage
	respType     string // the response's Content-Type
}

// leanServer is an mcp-go streamable HTTP server on the stateless revision whose
// tools/call requests it records, and for some tools answers itself (script).
type leanServer struct {
	url string
	// script answers a tools/call itself when it returns true.
	script func(w http.ResponseWriter, r *http.Request, p leanPost, s *leanServer) bool

	mu        sync.Mutex
	posts     []leanPost
	responses chan json.RawMessage // JSON-RPC responses the client posted
	cancelled chan string          // tools whose handler saw its context end
}

func (s *leanServer) calls() []leanPost {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []leanPost
	for _, p := range s.posts {
		if p.method == string(mcp.MethodToolsCall) {
			out = append(out, p)
		}
	}
	return out
}

func (s *leanServer) count(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, p := range s.posts {
		if p.method == method {
			n++
		}
	}
	return n
}

func (s *leanServer) countTool(tool string) int {
	n := 0
	for _, p := range s.calls() {
		if p.tool == tool {
			n++
		}
	}
	return n
}

type typeRecorder struct {
	http.ResponseWriter
	p *leanPost
}

func (w typeRecorder) WriteHeader(code int) {
	w.p.respType = w.Header().Get("Content-Type")
	w.ResponseWriter.WriteHeader(code)
}

func (w typeRecorder) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

func serveLean(t *testing.T, script func(w http.ResponseWriter, r *http.Request, p leanPost, s *leanServer) bool) *leanServer {
	t.Helper()
	ls := &leanServer{script: script, responses: make(chan json.RawMessage, 4), cancelled: make(chan string, 4)}
	s := server.NewMCPServer("lean", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo", mcp.WithString("message")), func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(r.GetString("message", "")), nil
	})
	s.AddTool(mcp.NewTool("slow"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-time.After(20 * time.Second):
			return mcp.NewToolResultText("slept"), nil
		case <-ctx.Done():
			ls.cancelled <- "slow"
			return nil, ctx.Err()
		}
	})
	for _, name := range []string{"broken", "gone", "asks", "later", "down", "stream", "polled"} {
		s.AddTool(mcp.NewTool(name), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("unscripted"), nil
		})
	}
	h := server.NewStreamableHTTPServer(s)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			if last := r.Header.Get("Last-Event-ID"); last != "" { // a resumed stream (handshake revisions)
				ls.mu.Lock()
				ls.posts = append(ls.posts, leanPost{method: "GET " + last, header: r.Header.Clone()})
				ls.mu.Unlock()
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				_, _ = io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":"+last+",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"resumed\"}]}}\n\n")
				return
			}
			h.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name         string         `json:"name"`
				Meta         map[string]any `json:"_meta"`
				RequestState *string        `json:"requestState"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &m)
		p := leanPost{method: m.Method, tool: m.Params.Name, header: r.Header.Clone(), meta: m.Params.Meta, state: m.Params.RequestState != nil, id: m.ID}
		if m.Method == "" {
			ls.responses <- body
			w.WriteHeader(http.StatusAccepted)
			return
		}
		rec := typeRecorder{ResponseWriter: w, p: &p}
		if m.Method != string(mcp.MethodToolsCall) || ls.script == nil || !ls.script(rec, r, p, ls) {
			h.ServeHTTP(rec, r)
		}
		ls.mu.Lock()
		ls.posts = append(ls.posts, p)
		ls.mu.Unlock()
	}))
	t.Cleanup(hs.Close)
	ls.url = hs.URL + "/mcp"
	return ls
}

func leanUpstream(url string) mcpbackend.Config {
	c := fast(mcpbackend.Config{Name: "lean", HTTP: &mcpbackend.HTTPConfig{URL: url, Headers: map[string]string{"X-Test": "1"}},
		Roots:    []mcpbackend.RootConfig{{URI: "file:///work", Name: "work"}},
		Sampling: mcpbackend.PolicyClient, Elicitation: mcpbackend.PolicyClient}) // every capability declared: _meta is compared with mcp-go's
	c.Heartbeat = mcpbackend.HeartbeatConfig{Interval: 30 * time.Second, Timeout: 5 * time.Second}
	return c
}

// writeJSONRPC answers a request with a JSON body.
func writeJSONRPC(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// TestLeanToolsCall covers the tools/call path the bridge sends itself to a streamable
// HTTP server on 2026-07-28, and the cases it hands to mcp-go's client.
func TestLeanToolsCall(t *testing.T) {
	script := func(w http.ResponseWriter, r *http.Request, p leanPost, s *leanServer) bool {
		switch p.tool {
		case "broken":
			writeJSONRPC(w, http.StatusOK, `{"jsonrpc":"2.0","id":`+string(p.id)+`,"error":{"code":-32602,"message":"bad arguments","data":{"field":"x"}}}`)
		case "stream": // progress on the call's stream, then the result
			w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
			w.WriteHeader(http.StatusOK)
			token, _ := json.Marshal(p.meta["progressToken"])
			for i := 1; i <= 3; i++ {
				_, _ = fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":%s,\"progress\":%d,\"total\":3,\"message\":\"step %d\"}}\n\n", token, i, i)
				w.(http.Flusher).Flush()
			}
			_, _ = fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"streamed\"}]}}\n\n", p.id)
		case "down":
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, "upstream proxy error")
		case "gone":
			if s.countTool("gone") == 0 { // the first call only: the server forgot the client
				http.NotFound(w, r)
				return true
			}
			writeJSONRPC(w, http.StatusOK, `{"jsonrpc":"2.0","id":`+string(p.id)+`,"result":{"content":[{"type":"text","text":"back"}]}}`)
		case "later": // multi round-trip: input first, the result once the state comes back
			if !p.state {
				writeJSONRPC(w, http.StatusOK, `{"jsonrpc":"2.0","id":`+string(p.id)+`,"result":{"resultType":"input_required","inputRequests":{},"requestState":"st"}}`)
				return true
			}
			writeJSONRPC(w, http.StatusOK, `{"jsonrpc":"2.0","id":`+string(p.id)+`,"result":{"content":[{"type":"text","text":"answered"}]}}`)
		case "asks": // a server→client request on the call's stream, answered before the result
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, ": a comment\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"srv-1\",\n"+
				"data: \"method\":\"roots/list\"}\r\n\r\n")
			w.(http.Flusher).Flush()
			var answer struct {
				ID     string `json:"id"`
				Result struct {
					Roots []mcp.Root `json:"roots"`
				} `json:"result"`
			}
			select {
			case raw := <-s.responses:
				_ = json.Unmarshal(raw, &answer)
			case <-time.After(10 * time.Second):
			}
			text := "no answer"
			if answer.ID == "srv-1" && len(answer.Result.Roots) == 1 {
				text = answer.Result.Roots[0].URI
			}
			res, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": p.id,
				"result": map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}})
			_, _ = fmt.Fprintf(w, "data: %s", res) // the stream ends without a blank line
		default:
			return false
		}
		return true
	}
	srv := serveLean(t, script)
	b, logs := start(t, []mcpbackend.Config{leanUpstream(srv.url)})
	if st := b.Status()[0]; st.ProtocolVersion != mcp.ProtocolVersion20260728 {
		t.Fatalf("negotiated %q, want the stateless revision", st.ProtocolVersion)
	}

	t.Run("json response", func(t *testing.T) {
		if got := callText(t, b, "echo", `{"message": "hi"}`); got != "hi" {
			t.Fatalf("echo = %q", got)
		}
		calls := srv.calls()
		p := calls[len(calls)-1]
		if p.respType != "application/json" {
			t.Fatalf("response type %q", p.respType)
		}
		if id, err := strconv.ParseInt(string(p.id), 10, 64); err != nil || id <= 1<<40 {
			t.Fatalf("request id %s: not sent on the lean path (its IDs start above 2^40)", p.id)
		}
		for k, want := range map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "echo", "Mcp-Protocol-Version": mcp.ProtocolVersion20260728,
			"X-Test": "1", "Content-Type": "application/json", "Accept": "application/json, text/event-stream"} {
			if got := p.header.Get(k); got != want {
				t.Errorf("header %s = %q, want %q", k, got, want)
			}
		}
		if p.meta[mcp.MetaKeyProtocolVersion] != mcp.ProtocolVersion20260728 || p.meta[mcp.MetaKeyClientInfo] == nil || p.meta[mcp.MetaKeyClientCapabilities] == nil {
			t.Fatalf("_meta = %v", p.meta)
		}
	})

	t.Run("each call names its own tool", func(t *testing.T) {
		// A call without hop headers goes out with the tool's shared headers: each
		// request still names its own tool, and the headers of one do not leak to another.
		before := len(srv.calls())
		for _, tool := range []string{"echo", "broken", "echo", "broken"} {
			_, _ = b.CallTool(ctxTimeout(t, 10*time.Second), tool, json.RawMessage(`{"message":"x"}`))
		}
		calls := srv.calls()[before:]
		if len(calls) != 4 {
			t.Fatalf("%d calls reached the server, want 4", len(calls))
		}
		for _, p := range calls {
			if got := p.header.Values("Mcp-Name"); len(got) != 1 || got[0] != p.tool {
				t.Errorf("call of %s: Mcp-Name %q", p.tool, got)
			}
			if got := p.header.Get("X-Test"); got != "1" {
				t.Errorf("call of %s: X-Test %q", p.tool, got)
			}
		}
	})

	t.Run("sse response with progress", func(t *testing.T) {
		var mu sync.Mutex
		var got []string
		ctx := mcpbackend.WithProgress(ctxTimeout(t, 10*time.Second), func(p mcpbackend.Progress) {
			mu.Lock()
			got = append(got, fmt.Sprintf("%v/%v %s", p.Progress, *p.Total, p.Message))
			mu.Unlock()
		})
		res, err := b.CallTool(ctx, "stream", nil)
		if err != nil {
			t.Fatal(err)
		}
		if txt := firstText(t, res); txt != "streamed" {
			t.Fatalf("stream = %q", txt)
		}
		mu.Lock()
		defer mu.Unlock()
		if strings.Join(got, ",") != "1/3 step 1,2/3 step 2,3/3 step 3" {
			t.Fatalf("progress relayed: %q", got)
		}
	})

	t.Run("upstream error", func(t *testing.T) {
		_, err := b.CallTool(ctxTimeout(t, 10*time.Second), "broken", nil)
		if codeOf(err) != -32602 || !strings.Contains(err.Error(), "bad arguments") {
			t.Fatalf("broken: %v", err)
		}
		_, err = b.CallTool(ctxTimeout(t, 10*time.Second), "down", nil)
		if codeOf(err) != schemas.CodeUnavailable {
			t.Fatalf("down: %v", err)
		}
	})

	t.Run("server request on the stream", func(t *testing.T) {
		if got := callText(t, b, "asks", `{}`); got != "file:///work" {
			t.Fatalf("asks = %q: the roots/list on the stream was not answered", got)
		}
	})

	t.Run("input required falls back to the client", func(t *testing.T) {
		before := len(srv.calls())
		if got := callText(t, b, "later", `{"a":1}`); got != "answered" {
			t.Fatalf("later = %q", got)
		}
		calls := srv.calls()[before:]
		if len(calls) != 3 || calls[0].state || calls[1].state || !calls[2].state {
			t.Fatalf("%d posts for the call, want lean, then mcp-go's two rounds", len(calls))
		}
		// The lean request and mcp-go's carry the same headers and _meta.
		for _, k := range []string{"Mcp-Method", "Mcp-Name", "Mcp-Protocol-Version", "Mcp-Session-Id", "X-Test", "Content-Type", "Accept", "Authorization", "Traceparent"} {
			if a, b := calls[0].header.Values(k), calls[1].header.Values(k); strings.Join(a, "|") != strings.Join(b, "|") {
				t.Errorf("header %s: lean %q, mcp-go %q", k, a, b)
			}
		}
		a, _ := json.Marshal(calls[0].meta)
		m, _ := json.Marshal(calls[1].meta)
		if !bytes.Equal(a, m) {
			t.Errorf("_meta: lean %s, mcp-go %s", a, m)
		}
	})

	t.Run("session expiry", func(t *testing.T) {
		discovers := srv.count(string(mcp.MethodServerDiscover))
		if got := callText(t, b, "gone", `{}`); got != "back" {
			t.Fatalf("gone = %q", got)
		}
		if srv.count(string(mcp.MethodServerDiscover)) <= discovers {
			t.Fatal("no new session after the 404")
		}
		if !strings.Contains(logs.String(), "MCP session expired") {
			t.Fatalf("expiry not logged:\n%s", logs)
		}
	})

	t.Run("cancellation", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := b.CallTool(ctx, "slow", nil)
		if codeOf(err) != schemas.CodeDeadlineExceeded {
			t.Fatalf("slow: %v", err)
		}
		select {
		case <-srv.cancelled: // ending the HTTP request is the cancellation on this revision
		case <-time.After(5 * time.Second):
			t.Fatal("the server's handler never saw the call end")
		}
		ctx, cancel = context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, cancel)
		if _, err := b.CallTool(ctx, "slow", nil); codeOf(err) != schemas.CodeCancelled {
			t.Fatalf("slow, cancelled: %v", err)
		}
		select {
		case <-srv.cancelled:
		case <-time.After(5 * time.Second):
			t.Fatal("the server's handler never saw the call cancelled")
		}
	})
}

// TestLeanToolsCallHandshakeRevision: on a revision before 2026-07-28 the lean path sends
// the session ID and no request metadata or standard headers, tells the server of a
// cancelled call, and resumes a stream the server ended before the response.
func TestLeanToolsCallHandshakeRevision(t *testing.T) {
	srv := serveLean(t, func(w http.ResponseWriter, r *http.Request, p leanPost, s *leanServer) bool {
		if p.tool != "polled" {
			return false
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = fmt.Fprintf(w, "id: %s\nretry: 10\ndata:\n\n", p.id)
		return true
	})
	cfg := leanUpstream(srv.url)
	cfg.ProtocolVersions = []string{mcp.ProtocolVersion20251125}
	b, _ := start(t, []mcpbackend.Config{cfg})

	if got := callText(t, b, "echo", `{"message":"hi"}`); got != "hi" {
		t.Fatalf("echo = %q", got)
	}
	calls := srv.calls()
	p := calls[len(calls)-1]
	if id, err := strconv.ParseInt(string(p.id), 10, 64); err != nil || id <= 1<<40 {
		t.Fatalf("request id %s: not sent on the lean path", p.id)
	}
	if p.header.Get("Mcp-Session-Id") == "" || p.header.Get("Mcp-Protocol-Version") != mcp.ProtocolVersion20251125 ||
		p.header.Get("Mcp-Method") != "" || p.header.Get("X-Test") != "1" || len(p.meta) != 0 {
		t.Fatalf("headers %v, _meta %v", p.header, p.meta)
	}

	if got := callText(t, b, "polled", `{}`); got != "resumed" {
		t.Fatalf("polled = %q", got)
	}
	if srv.count("GET "+string(srv.calls()[len(srv.calls())-1].id)) != 1 {
		t.Fatal("the stream was not resumed with Last-Event-ID")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := b.CallTool(ctx, "slow", nil); codeOf(err) != schemas.CodeDeadlineExceeded {
		t.Fatalf("slow: %v", err)
	}
	waitFor(t, 5*time.Second, "notifications/cancelled to be posted", func() bool {
		return srv.count(string(mcp.MethodNotificationCancelled)) > 0
	})
}
