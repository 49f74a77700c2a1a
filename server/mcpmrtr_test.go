package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/internal/redistest"
)

// mrtrYAML is a gateway bridging the conformance fixtures at upstream (speaking version)
// with sampling and elicitation relayed to the caller, for the API keys alice-key and
// bob-key; face is added to mcp_face (after the session key) and extra at the end.
func mrtrYAML(upstream, version, face, extra string) string {
	return fmt.Sprintf(`server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth:
  api_keys:
    - {name: alice, hash: %q, scopes: [tools.call]}
    - {name: bob, hash: %q, scopes: [tools.call]}
routing:
  mcp:
    servers:
      - name: demo
        http: {url: %q}
        protocol_versions: [%s]
        sampling: client
        elicitation: client
mcp_face: {session_key: %s%s}
log: {level: debug}
%s`, apiKeyHash("alice-key"), apiKeyHash("bob-key"), upstream, version, testSessionKey, face, extra)
}

// modernClient connects an mcp-go client of protocol 2026-07-28 (its multi round-trip
// loop answers input requests with its handlers, the test's downstream's) as key, its
// requests sent by rt (nil: the default transport).
func modernClient(t *testing.T, endpoint, key string, rt http.RoundTripper, handlers bool) *client.Client {
	t.Helper()
	if rt == nil {
		rt = http.DefaultTransport.(*http.Transport).Clone()
	}
	hc := &http.Client{Transport: rt, Timeout: 30 * time.Second}
	tr, err := transport.NewStreamableHTTP(endpoint, transport.WithHTTPBasicClient(hc),
		transport.WithHTTPHeaders(map[string]string{"X-API-Key": key}))
	if err != nil {
		t.Fatal(err)
	}
	var opts []client.ClientOption
	if handlers {
		d := mrtrDownstream{&downstream{}}
		opts = append(opts, client.WithSamplingHandler(d), client.WithElicitationHandler(d))
	}
	opts = append(opts, client.WithProtocolVersion(mcp.ProtocolVersion20260728))
	c := client.NewClient(tr, opts...)
	t.Cleanup(func() { _ = c.Close() })
	ctx := ctxFor(t, 10*time.Second)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.ProtocolVersion20260728
	init.Params.ClientInfo = mcp.Implementation{Name: "mrtr-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	if v := c.ProtocolVersion(); v != mcp.ProtocolVersion20260728 {
		t.Fatalf("the client speaks %q", v)
	}
	return c
}

// mrtrDownstream answers input requests as downstream does; the prompt of a sampling
// request decoded from an input request is a JSON object, not mcp.TextContent.
type mrtrDownstream struct{ *downstream }

// CreateMessage implements client.SamplingHandler.
func (d mrtrDownstream) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if len(req.Messages) > 0 {
		if m, ok := req.Messages[0].Content.(map[string]any); ok {
			req.Messages[0].Content = mcp.NewTextContent(fmt.Sprint(m["text"]))
		}
	}
	return d.downstream.CreateMessage(ctx, req)
}

// TestMCPMRTRRoundTrips: a 2026-07-28 caller's tools/call whose upstream asks for
// sampling or elicitation ends with an input_required result; the client's retry with the
// answers gets the upstream's result — for an upstream of either revision (a 2025-11-25
// upstream's own request, a 2026-07-28 upstream's input_required result), and for
// prompts/get too. A caller that did not declare the capability is refused, with the
// reason.
func TestMCPMRTRRoundTrips(t *testing.T) {
	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			ts := startWith(t, mrtrYAML(serveDemoMCP(t), version, "", ""), Options{})
			waitForTools(t, ts)
			c := modernClient(t, ts.base+"/mcp", "alice-key", nil, true)
			tests := []struct {
				tool string
				args map[string]any
				want string
			}{
				{"test_sampling", map[string]any{"prompt": "the sky"}, "LLM response: completed the sky"},
				{"test_elicitation", map[string]any{"message": "who are you?"}, `"asked":"who are you?"`},
				{"test_elicitation_sep1034_defaults", nil, "action=accept"},
			}
			for _, tt := range tests {
				if got := toolText(t, c, tt.tool, tt.args); !strings.Contains(got, tt.want) {
					t.Errorf("%s = %q, want %q in it", tt.tool, got, tt.want)
				}
			}

			bare := modernClient(t, ts.base+"/mcp", "alice-key", nil, false)
			req := mcp.CallToolRequest{}
			req.Params.Name, req.Params.Arguments = "test_sampling", map[string]any{"prompt": "x"}
			_, err := bare.CallTool(ctxFor(t, 15*time.Second), req)
			if err == nil || !strings.Contains(err.Error(), "did not declare the sampling capability") {
				t.Fatalf("sampling for a caller without the capability: %v", err)
			}
		})
	}
}

// rawMRTR drives the face's multi round trips by hand, as a 2026-07-28 caller declaring
// sampling and elicitation.
type rawMRTR struct {
	t  *testing.T
	hc *http.Client
}

const mrtrMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"sampling":{},"elicitation":{}}}`

// rpcAnswer is a JSON-RPC response of the face.
type rpcAnswer struct {
	Result struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
		Content       []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Error *struct {
		Code    int            `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data"`
	} `json:"error"`
}

// call posts a tools/call of tool as key to base, with the params' extra members.
func (r rawMRTR) call(base, key, tool, extra string) rpcAnswer {
	r.t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":%q,"arguments":{"prompt":"p","message":"m"}%s,%s}}`, tool, extra, mrtrMeta)
	req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-API-Key", key)
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	resp, err := r.hc.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	if i := strings.Index(string(b), "data: "); i >= 0 { // an event stream: its last event
		b = []byte(strings.TrimSpace(string(b)[strings.LastIndex(string(b), "data: ")+len("data: "):]))
	}
	var a rpcAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		r.t.Fatalf("answer %d %q: %v", resp.StatusCode, b, err)
	}
	return a
}

// ask starts tool and returns the input_required round: the id of its one request and
// the requestState.
func (r rawMRTR) ask(base, key, tool string) (string, string) {
	r.t.Helper()
	a := r.call(base, key, tool, "")
	if a.Error != nil || a.Result.ResultType != "input_required" || len(a.Result.InputRequests) != 1 || a.Result.RequestState == "" {
		r.t.Fatalf("first %s: %+v %+v", tool, a, a.Error)
	}
	for id := range a.Result.InputRequests {
		return id, a.Result.RequestState
	}
	return "", ""
}

// samplingRetry is the params' members of a retry answering the sampling request id.
func samplingRetry(id, state string) string {
	return fmt.Sprintf(`,"inputResponses":{%q:{"role":"assistant","content":{"type":"text","text":"ok"},"model":"m","stopReason":"endTurn"}},"requestState":%q`, id, state)
}

func wantRefused(t *testing.T, a rpcAnswer, reason string) {
	t.Helper()
	if a.Error == nil || a.Error.Code != -32602 || a.Error.Data["requestState"] != reason {
		t.Fatalf("answer %+v, want -32602 with requestState %q", a, reason)
	}
}

// TestMCPMRTRBadRequestState: a retry whose requestState was altered, belongs to another
// caller, names another tool, was used before, or expired is refused with -32602 and the
// reason in data.requestState, and never gets the call's result; the honest retry does.
func TestMCPMRTRBadRequestState(t *testing.T) {
	upstream := serveDemoMCP(t)
	ts := startWith(t, mrtrYAML(upstream, mcp.ProtocolVersion20260728, "", ""), Options{})
	waitForTools(t, ts)
	r := rawMRTR{t: t, hc: httpClient(t)}
	id, st := r.ask(ts.base, "alice-key", "test_sampling")

	enc, sig, _ := strings.Cut(st, ".")
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	tests := []struct {
		name, key, tool, state, reason string
	}{
		{"payload altered", "alice-key", "test_sampling", flip(enc, 10) + "." + sig, "invalid"},
		{"signature altered", "alice-key", "test_sampling", enc + "." + flip(sig, 3), "invalid"},
		{"not a token", "alice-key", "test_sampling", "x", "invalid"},
		{"another caller", "bob-key", "test_sampling", st, "other_caller"},
		{"another tool", "alice-key", "test_elicitation", st, "other_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := r.call(ts.base, tt.key, tt.tool, samplingRetry(id, tt.state))
			wantRefused(t, a, tt.reason)
		})
	}
	// The refused retries did not use it up: the honest one gets the result, once.
	a := r.call(ts.base, "alice-key", "test_sampling", samplingRetry(id, st))
	if a.Error != nil || len(a.Result.Content) == 0 || a.Result.Content[0].Text != "LLM response: ok" {
		t.Fatalf("honest retry: %+v", a)
	}
	wantRefused(t, r.call(ts.base, "alice-key", "test_sampling", samplingRetry(id, st)), "used")

	// A retry after mcp_face.mrtr.parked_timeout: the state expired, the call is gone.
	short := startWith(t, mrtrYAML(upstream, mcp.ProtocolVersion20260728, ", mrtr: {parked_timeout: 200ms}", ""), Options{})
	waitForTools(t, short)
	id, st = r.ask(short.base, "alice-key", "test_sampling")
	time.Sleep(300 * time.Millisecond)
	wantRefused(t, r.call(short.base, "alice-key", "test_sampling", samplingRetry(id, st)), "expired")
	// The parked call was ended: the upstream's request answered with the error, the call
	// cancelled — whichever ends it first.
	waitFor(t, func() bool {
		for line := range strings.SplitSeq(short.logs.String(), "\n") {
			if strings.Contains(line, `msg="call failed" method=mcp.test_sampling`) &&
				(strings.Contains(line, "CANCELLED (-32024)") || strings.Contains(line, "mcp_face.mrtr.parked_timeout")) {
				return strings.Contains(short.logs.String(), "did not answer in time")
			}
		}
		return false
	})
}

// alternate sends each request to the next of its hosts in turn, and records the host of
// each tools/call: firsts (without a requestState) and retries.
type alternate struct {
	hosts []string
	base  http.RoundTripper
	mu    sync.Mutex
	n     int
	calls []string // "first@host" or "retry@host", in order
}

func (a *alternate) RoundTrip(req *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(req.Body)
	_ = req.Body.Close()
	a.mu.Lock()
	host := a.hosts[a.n%len(a.hosts)]
	a.n++
	if strings.Contains(string(body), `"tools/call"`) {
		kind := "first"
		if strings.Contains(string(body), `"requestState"`) {
			kind = "retry"
		}
		a.calls = append(a.calls, kind+"@"+host)
	}
	a.mu.Unlock()
	r := req.Clone(req.Context())
	r.URL = &url.URL{Scheme: "http", Host: host, Path: req.URL.Path}
	r.Host = host
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	r.ContentLength = int64(len(body))
	return a.base.RoundTrip(r)
}

// TestMCPMRTRAcrossReplicas: two gateway processes share a real Redis; a 2026-07-28
// client whose every request goes to the other one has its retries forwarded to the
// process holding the call, for sampling and elicitation. A retry whose owner is gone is
// refused as lost within forward_timeout.
func TestMCPMRTRAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) { mrtrAcrossReplicas(t, srv, version) })
	}
}

func mrtrAcrossReplicas(t *testing.T, srv *redistest.Server, version string) {
	a, b := startMCPReplicas(t, srv, mrtrYAML(serveDemoMCP(t), version, ", mrtr: {forward_timeout: 2s}", ""))
	hostA, hostB := a.BoundaryAddr().String(), b.BoundaryAddr().String()

	alt := &alternate{hosts: []string{hostA, hostB}, base: http.DefaultTransport.(*http.Transport).Clone()}
	c := modernClient(t, "http://"+hostA+"/mcp", "alice-key", alt, true)
	for _, tt := range []struct{ tool, arg, want string }{
		{"test_sampling", "prompt", "LLM response: completed over there"},
		{"test_elicitation", "message", `"asked":"over there"`},
	} {
		if got := toolText(t, c, tt.tool, map[string]any{tt.arg: "over there"}); !strings.Contains(got, tt.want) {
			t.Errorf("%s = %q, want %q in it", tt.tool, got, tt.want)
		}
	}
	alt.mu.Lock()
	calls := alt.calls
	alt.mu.Unlock()
	// Each tool call: its first request on one process, its retry on the other.
	if len(calls) != 4 {
		t.Fatalf("tools/call requests %v, want a first and a retry per tool", calls)
	}
	for i := 0; i < len(calls); i += 2 {
		first, retry := strings.TrimPrefix(calls[i], "first@"), strings.TrimPrefix(calls[i+1], "retry@")
		if first == calls[i] || retry == calls[i+1] || first == retry {
			t.Fatalf("tools/call requests %v: a retry did not reach the other process", calls)
		}
	}
	holder := a
	if strings.TrimPrefix(calls[0], "first@") == hostB {
		holder = b
	}
	if n := strings.Count(holder.logs.String(), "serving a retry forwarded by another replica"); n != 2 {
		t.Errorf("the process holding the calls served %d forwarded retries, want 2", n)
	}

	// The owner goes away: the retry on the other replica is lost, and says so.
	r := rawMRTR{t: t, hc: httpClient(t)}
	id, st := r.ask(a.base, "alice-key", "test_sampling")
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ans := r.call(b.base, "alice-key", "test_sampling", samplingRetry(id, st))
	wantRefused(t, ans, "lost")
	if !strings.Contains(ans.Error.Message, "start over") {
		t.Errorf("lost call message %q", ans.Error.Message)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the lost call took %v to tell", d)
	}
}

// askingUpstream is an mcp-go server whose prompt "confirm" asks for an elicitation (a
// multi round-trip handler: mcp-go sends a 2025-11-25 client the request itself) and
// whose resource "ask://me" asks for one during the read, as a 2025-11-25 server can.
func askingUpstream(t *testing.T) string {
	t.Helper()
	srv := mcpserver.NewMCPServer("asking", "1", mcpserver.WithPromptCapabilities(false), mcpserver.WithResourceCapabilities(false, false))
	srv.AddPrompt(mcp.NewPrompt("confirm"), func(_ context.Context, r mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		if answer := mcpserver.ElicitationResponse(r.Params.InputResponses, "ok"); answer != nil {
			raw, _ := json.Marshal(answer.Content)
			return mcp.NewGetPromptResult("confirmed", []mcp.PromptMessage{
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(string(answer.Action)+" "+string(raw)))}), nil
		}
		return mcpserver.NewInputRequestBuilder("").Elicit("ok", mcp.ElicitationParams{Message: "sure?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"username":{"type":"string"}}}`)}).PromptResult(), nil
	})
	srv.AddResource(mcp.NewResource("ask://me", "me"), func(ctx context.Context, _ mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		req := mcp.ElicitationRequest{}
		req.Params = mcp.ElicitationParams{Message: "read?", RequestedSchema: json.RawMessage(`{"type":"object"}`)}
		if _, err := srv.RequestElicitation(ctx, req); err != nil {
			return nil, err
		}
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: "ask://me", Text: "read"}}, nil
	})
	h := mcpserver.NewStreamableHTTPServer(srv)
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = h.Shutdown(context.Background())
		hs.Close()
	})
	return hs.URL + "/mcp"
}

// TestMCPMRTRPromptsAndReads: prompts/get takes part in multi round trips as tools/call
// does, for an upstream of either revision; a resources/read cannot carry input requests
// (mcp-go's resource handlers return contents only), and the upstream's request during
// one is refused with that reason.
func TestMCPMRTRPromptsAndReads(t *testing.T) {
	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			ts := startWith(t, mrtrYAML(askingUpstream(t), version, "", ""), Options{})
			waitFor(t, func() bool { return len(ts.mcp.MCPServer().ListPrompts()) > 0 })
			c := modernClient(t, ts.base+"/mcp", "alice-key", nil, true)
			req := mcp.GetPromptRequest{}
			req.Params.Name = "confirm"
			res, err := c.GetPrompt(ctxFor(t, 15*time.Second), req)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Messages) != 1 || res.Description != "confirmed" {
				t.Fatalf("prompt: %+v", res)
			}
			if tc, ok := res.Messages[0].Content.(mcp.TextContent); !ok || !strings.Contains(tc.Text, `accept {`) || !strings.Contains(tc.Text, `"asked":"sure?"`) {
				t.Fatalf("prompt message: %+v", res.Messages[0].Content)
			}
			if version != mcp.ProtocolVersion20251125 {
				return // a 2026-07-28 server sends no requests during a read
			}
			rr := mcp.ReadResourceRequest{}
			rr.Params.URI = "ask://me"
			_, err = c.ReadResource(ctxFor(t, 15*time.Second), rr)
			if err == nil || !strings.Contains(err.Error(), "only tools/call and prompts/get can carry input requests") {
				t.Fatalf("a read whose upstream asks: %v", err)
			}
		})
	}
}

// TestMCPMRTRConfigKeys: mcp_face.mrtr's keys are read, and refused below their edge.
func TestMCPMRTRConfigKeys(t *testing.T) {
	tests := []struct {
		mrtr string
		want string // "" valid
	}{
		{"{}", ""},
		{"{parked_timeout: 1ms, max_parked: 1, forward_timeout: 30ms}", ""},
		{"{forward_timeout: 29ms}", "forward_timeout must be at least 30ms"},
		{"{parked_timeout: -1s}", "parked_timeout"},
		{"{max_parked: -1}", "max_parked"},
		{"{forward_timeout: -1s}", "forward_timeout"},
		{"{parked: 1s}", "parked"},
	}
	for _, tt := range tests {
		t.Run(tt.mrtr, func(t *testing.T) {
			cfg, err := Parse("test.yaml", []byte(mrtrYAML("http://127.0.0.1:1/mcp", mcp.ProtocolVersion20260728, ", mrtr: "+tt.mrtr, "")))
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if tt.mrtr != "{}" && (cfg.MCPFace.MRTR.ParkedTimeout != time.Millisecond || cfg.MCPFace.MRTR.MaxParked != 1 || cfg.MCPFace.MRTR.ForwardTimeout != 30*time.Millisecond) {
					t.Fatalf("read %+v", cfg.MCPFace.MRTR)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "mcp_face") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse = %v, want an error naming mcp_face and %q", err, tt.want)
			}
		})
	}
}
