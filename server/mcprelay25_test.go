package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/redistest"
)

// relayReplicas starts two gateways sharing a real Redis, bridging the conformance
// fixtures (a 2025-11-25 upstream) with sampling and elicitation relayed to the caller.
func relayReplicas(t *testing.T, face string) (a, b *testServer) {
	t.Helper()
	return startMCPReplicas(t, redistest.Start(t), mrtrYAML(serveDemoMCP(t), mcp.ProtocolVersion20251125, face, ""))
}

// answerHosts records, for a client sending through an alternate, the host of each
// tools/call and of each POST answering a request of the gateway.
type answerHosts struct {
	alternate
	mu     sync.Mutex
	events []string // "call@host" or "answer@host"
}

func (h *answerHosts) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && req.Body != nil {
		body, _ := io.ReadAll(req.Body)
		_ = req.Body.Close()
		req.Body = io.NopCloser(strings.NewReader(string(body)))
		kind := ""
		switch {
		case strings.Contains(string(body), `"tools/call"`):
			kind = "call"
		case strings.Contains(string(body), `"result"`) && strings.Contains(string(body), `"gatehouse-relay-`):
			kind = "answer"
		}
		if kind != "" {
			h.alternate.mu.Lock()
			host := h.hosts[h.n%len(h.hosts)]
			h.alternate.mu.Unlock()
			h.mu.Lock()
			h.events = append(h.events, kind+"@"+host)
			h.mu.Unlock()
		}
	}
	if req.Body == nil {
		req.Body = http.NoBody // the alternate reads every body
	}
	return h.alternate.RoundTrip(req)
}

// TestMCPRelay25AcrossReplicas: a 2025-11-25 client whose requests alternate between two
// replicas gets the upstream's sampling and elicitation requests on the stream of the
// call that caused them, and its answers, POSTed to the other replica, reach the waiting
// upstream call there: the call completes with them, and the client's session lives on.
func TestMCPRelay25AcrossReplicas(t *testing.T) {
	a, b := relayReplicas(t, ", mrtr: {forward_timeout: 2s}")
	h := &answerHosts{alternate: alternate{hosts: []string{a.BoundaryAddr().String(), b.BoundaryAddr().String()},
		base: http.DefaultTransport.(*http.Transport).Clone()}}
	d := &downstream{}
	tr, err := transport.NewStreamableHTTP("http://"+a.BoundaryAddr().String()+"/mcp",
		transport.WithHTTPBasicClient(&http.Client{Transport: h, Timeout: 30 * time.Second}),
		transport.WithHTTPHeaders(map[string]string{"X-API-Key": "alice-key"}),
		transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	d.Client = client.NewClient(tr, client.WithSamplingHandler(d), client.WithElicitationHandler(d))
	t.Cleanup(func() { _ = d.Close() })
	ctx := ctxFor(t, 30*time.Second)
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	init.Params.ClientInfo = mcp.Implementation{Name: "relay25-test", Version: "1"}
	init.Params.Capabilities.Sampling = &mcp.SamplingCapability{}
	init.Params.Capabilities.Elicitation = &mcp.ElicitationCapability{}
	if _, err := d.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	for round := range 2 { // each call and its answer in both orders of the replicas
		for _, tt := range []struct{ tool, arg, want string }{
			{"test_sampling", "prompt", "LLM response: completed over there"},
			{"test_elicitation", "message", `"asked":"over there"`},
		} {
			if got := toolText(t, d.Client, tt.tool, map[string]any{tt.arg: "over there"}); !strings.Contains(got, tt.want) {
				t.Errorf("round %d: %s = %q, want %q in it", round, tt.tool, got, tt.want)
			}
		}
		if round == 0 { // shift the alternation by one request
			if _, err := d.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	h.mu.Lock()
	events := h.events
	h.mu.Unlock()
	if len(events) != 8 {
		t.Fatalf("requests %v, want a call and an answer per tool and round", events)
	}
	for i := 0; i < len(events); i += 2 {
		call, answer := strings.TrimPrefix(events[i], "call@"), strings.TrimPrefix(events[i+1], "answer@")
		if call == events[i] || answer == events[i+1] || call == answer {
			t.Fatalf("requests %v: an answer did not reach the other replica", events)
		}
	}
	// The session lives on, on either replica.
	if _, err := d.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
}

// sseReader reads the JSON-RPC messages of an event stream.
type sseReader struct{ sc *bufio.Scanner }

func (r sseReader) next(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	for r.sc.Scan() {
		line := r.sc.Text()
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(data), &m); err != nil {
				t.Fatalf("event %q: %v", data, err)
			}
			return m
		}
	}
	t.Fatalf("the stream ended: %v", r.sc.Err())
	return nil
}

// post sends body as key on session sid to base's /mcp, accepting only JSON.
func relayPost(t *testing.T, hc *http.Client, base, key, sid, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-API-Key", key)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", mcp.ProtocolVersion20251125)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	out, _ := io.ReadAll(resp.Body)
	if sid == "" {
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
	}
	return resp.StatusCode, string(out)
}

// relayInit initializes a 2025-11-25 session as key at base, with sampling and
// elicitation, and returns its ID.
func relayInit(t *testing.T, hc *http.Client, base, key string) string {
	t.Helper()
	status, sid := relayPost(t, hc, base, key, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",`+
		`"capabilities":{"sampling":{},"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d, session %q", status, sid)
	}
	if status, body := relayPost(t, hc, base, key, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", status, body)
	}
	return sid
}

// TestMCPRelay25ToTheGETStream: a client whose call's response cannot be a stream (it
// accepts JSON only) gets the upstream's request on its session's GET stream, open on the
// other replica; an answer to it from another principal's session is refused, without
// ending either session, and the owner's answer, POSTed to the other replica again,
// completes the call. An answer to a request no call waits for is refused as such, not
// as an unknown session.
func TestMCPRelay25ToTheGETStream(t *testing.T) {
	a, b := relayReplicas(t, ", mrtr: {forward_timeout: 2s}")
	hc := httpClient(t)
	sid := relayInit(t, hc, a.base, "alice-key")

	// The GET stream, on b.
	getCtx, stopGet := context.WithCancel(t.Context())
	defer stopGet()
	greq, _ := http.NewRequestWithContext(getCtx, http.MethodGet, b.base+"/mcp", nil)
	greq.Header.Set("Accept", "text/event-stream")
	greq.Header.Set("X-API-Key", "alice-key")
	greq.Header.Set("Mcp-Session-Id", sid)
	greq.Header.Set("Mcp-Protocol-Version", mcp.ProtocolVersion20251125)
	gresp, err := (&http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}).Do(greq)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = gresp.Body.Close() }()
	if gresp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %d", gresp.StatusCode)
	}
	stream := sseReader{bufio.NewScanner(gresp.Body)}
	// b recorded the stream before its header was sent.

	type callOut struct {
		status int
		body   string
	}
	done := make(chan callOut, 1)
	go func() {
		status, body := relayPost(t, hc, a.base, "alice-key", sid,
			`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"test_sampling","arguments":{"prompt":"by the stream"}}}`)
		done <- callOut{status, body}
	}()
	msg := stream.next(t)
	if string(msg["method"]) != `"sampling/createMessage"` {
		t.Fatalf("the GET stream carried %v, want the sampling request", msg)
	}
	var id string
	if err := json.Unmarshal(msg["id"], &id); err != nil || !strings.HasPrefix(id, "gatehouse-relay-") {
		t.Fatalf("request id %s", msg["id"])
	}
	answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"role":"assistant","content":{"type":"text","text":"from the stream"},"model":"m"}}`, id)

	// Another principal: with alice's session ID, it is an unknown session to it; with its
	// own session, the request was not sent there.
	if status, body := relayPost(t, hc, b.base, "bob-key", sid, answer); status != http.StatusNotFound {
		t.Errorf("bob's answer on alice's session: %d %s, want 404", status, body)
	}
	bobSID := relayInit(t, hc, b.base, "bob-key")
	if status, body := relayPost(t, hc, b.base, "bob-key", bobSID, answer); status != http.StatusForbidden {
		t.Errorf("bob's answer on his session: %d %s, want 403", status, body)
	}

	if status, body := relayPost(t, hc, b.base, "alice-key", sid, answer); status != http.StatusAccepted {
		t.Fatalf("alice's answer on b: %d %s, want 202", status, body)
	}
	select {
	case out := <-done:
		if out.status != http.StatusOK || !strings.Contains(out.body, "LLM response: from the stream") {
			t.Fatalf("the call: %d %s", out.status, out.body)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the call did not complete")
	}
	// Answered twice: no call waits for it any more; the session lives on.
	if status, body := relayPost(t, hc, b.base, "alice-key", sid, answer); status != http.StatusBadRequest || !strings.Contains(body, "No call waits") {
		t.Errorf("a second answer: %d %s, want 400", status, body)
	}
	if status, body := relayPost(t, hc, a.base, "alice-key", sid, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`); status != http.StatusOK {
		t.Errorf("the session after the answers: %d %s", status, body)
	}
}

// TestMCPRelay25OwnerGone: an answer to a request whose process is gone is refused within
// forward_timeout as unavailable (503), not as an unknown session.
func TestMCPRelay25OwnerGone(t *testing.T) {
	a, b := relayReplicas(t, ", mrtr: {forward_timeout: 1s}")
	hc := httpClient(t)
	sid := relayInit(t, hc, b.base, "alice-key")
	gone := "gatehouse-relay-" + strings.Repeat("ab", 16) + "-" + strings.Repeat("cd", 8) // a process that never was
	start := time.Now()
	status, body := relayPost(t, hc, b.base, "alice-key", sid,
		fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"action":"decline"}}`, gone))
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "forward_timeout") {
		t.Errorf("an answer for a gone process: %d %s, want 503", status, body)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("it took %v", d)
	}
	_ = a
}
