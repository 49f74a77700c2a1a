package mcpbackend_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
)

// statefulFixture is a stateful streamable HTTP MCP server (a handshake revision's, as
// servers before 2026-07-28 are): "whoami" answers the session id, "remember" keeps a
// value per session and "recall" returns it, "hold" waits until released. It records the
// sessions DELETEd and the initializes it answered.
type statefulFixture struct {
	url      string
	sessions *sessionTable
	release  chan struct{}
	holding  chan struct{} // receives when hold starts

	mu      sync.Mutex
	memory  map[string]string
	deletes []string
	inits   int
	methods []string
}

func (f *statefulFixture) deleted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.deletes)
}

func (f *statefulFixture) initializes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inits
}

func (f *statefulFixture) posted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.methods)
}

// serveStateful starts the fixture; with legacyOnly it answers server/discover as a
// server before 2026-07-28 does (method not found), so clients fall back to initialize.
func serveStateful(t *testing.T, legacyOnly bool) *statefulFixture {
	t.Helper()
	f := &statefulFixture{sessions: &sessionTable{valid: map[string]bool{}}, memory: map[string]string{}, release: make(chan struct{}), holding: make(chan struct{}, 1)}
	s := server.NewMCPServer("stateful", "1.0.0", server.WithToolCapabilities(true), server.WithResourceCapabilities(false, false))
	sid := func(ctx context.Context) string {
		if cs := server.ClientSessionFromContext(ctx); cs != nil {
			return cs.SessionID()
		}
		return ""
	}
	s.AddTool(mcp.NewTool("whoami"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(sid(ctx)), nil
	})
	s.AddTool(mcp.NewTool("remember", mcp.WithString("value")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		f.mu.Lock()
		f.memory[sid(ctx)] = r.GetString("value", "")
		f.mu.Unlock()
		return mcp.NewToolResultText("ok"), nil
	})
	s.AddTool(mcp.NewTool("recall"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return mcp.NewToolResultText(f.memory[sid(ctx)]), nil
	})
	s.AddTool(mcp.NewTool("hold"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		f.holding <- struct{}{}
		select {
		case <-f.release:
			return mcp.NewToolResultText("released"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	s.AddResource(mcp.NewResource("mem://session", "session"), func(ctx context.Context, _ mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: "mem://session", Text: sid(ctx)}}, nil
	})
	h := server.NewStreamableHTTPServer(s, server.WithSessionIdManager(f.sessions))
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodDelete:
			f.mu.Lock()
			f.deletes = append(f.deletes, r.Header.Get("Mcp-Session-Id"))
			f.mu.Unlock()
		case http.MethodPost:
			body, _ := io.ReadAll(r.Body)
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			_ = json.Unmarshal(body, &m)
			f.mu.Lock()
			f.methods = append(f.methods, m.Method)
			if m.Method == "initialize" {
				f.inits++
			}
			f.mu.Unlock()
			if legacyOnly && m.Method == string(mcp.MethodServerDiscover) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32601,"message":"Method not found"}}`))
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	f.url = hs.URL + "/mcp"
	return f
}

// callerUpstream is the fixture as an upstream whose sessions are per caller.
func callerUpstream(url string, cs mcpbackend.CallerSessionsConfig) mcpbackend.Config {
	c := fast(mcpbackend.Config{Name: "stateful", HTTP: &mcpbackend.HTTPConfig{URL: url}, SessionAffinity: mcpbackend.AffinityCaller, CallerSessions: cs})
	c.Heartbeat = mcpbackend.HeartbeatConfig{Interval: 30 * time.Second, Timeout: 5 * time.Second}
	return c
}

// faceSession is an MCP face session as mcp-go's server puts it in a request's context.
type faceSession string

func (faceSession) Initialize()                                         {}
func (faceSession) Initialized() bool                                   { return true }
func (faceSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return nil }
func (s faceSession) SessionID() string                                 { return string(s) }

var faceServer = server.NewMCPServer("face", "1")

// caller is who makes a call.
type caller struct {
	iss, sub, bearer string
	anonymous        bool
	session          string // the MCP face session id; empty: a stateless caller
}

// ctx returns a context of a call the caller makes through the pipeline.
func (c caller) ctx(t *testing.T) context.Context {
	p := gateway.Principal{Subject: c.sub, Bearer: c.bearer, Anonymous: c.anonymous}
	if c.iss != "" {
		p.Claims = map[string]any{"iss": c.iss, "sub": c.sub}
	}
	ctx := gateway.WithCall(ctxTimeout(t, 10*time.Second), &gateway.Call{Method: "tools/call", Principal: p, Protocol: gateway.ProtocolMCP})
	if c.session != "" {
		ctx = faceServer.WithContext(ctx, faceSession(c.session))
	}
	return ctx
}

func (c caller) call(t *testing.T, b *mcpbackend.Bridge, tool, args string) string {
	t.Helper()
	res, err := b.CallTool(c.ctx(t), tool, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s as %+v: %v", tool, c, err)
	}
	return firstText(t, res)
}

var (
	alice      = caller{iss: "https://issuer.test", sub: "alice", bearer: "token-1"}
	aliceAgain = caller{iss: "https://issuer.test", sub: "alice", bearer: "token-2"} // a refreshed token
	bob        = caller{iss: "https://issuer.test", sub: "bob", bearer: "token-3"}
	aliceOther = caller{iss: "https://other.test", sub: "alice", bearer: "token-4"} // another issuer's alice
	aliceS1    = caller{iss: "https://issuer.test", sub: "alice", session: "face-1"}
	aliceS2    = caller{iss: "https://issuer.test", sub: "alice", session: "face-2"}
	anonS1     = caller{sub: "anonymous", anonymous: true, session: "face-3"}
)

// TestCallerAffinityKeys: each caller gets a session of its own, which serves no other
// caller; a refreshed token keeps it; the bridge's own requests use the pool.
func TestCallerAffinityKeys(t *testing.T) {
	f := serveStateful(t, false)
	cfg := callerUpstream(f.url, mcpbackend.CallerSessionsConfig{})
	cfg.ProtocolVersions = []string{mcp.ProtocolVersion20251125}
	b, _ := start(t, []mcpbackend.Config{cfg})
	pool := callText(t, b, "whoami", "{}") // no call in the context: the bridge's own
	sessions := map[string]string{}
	for _, c := range []struct {
		name string
		who  caller
	}{{"alice", alice}, {"bob", bob}, {"alice of another issuer", aliceOther}, {"alice's face session 1", aliceS1},
		{"alice's face session 2", aliceS2}, {"anonymous with a face session", anonS1}} {
		sid := c.who.call(t, b, "whoami", "{}")
		if sid == "" || sid == pool {
			t.Fatalf("%s: upstream session %q (the pool's is %q)", c.name, sid, pool)
		}
		for other, osid := range sessions {
			if osid == sid {
				t.Fatalf("%s and %s share the upstream session %s", c.name, other, sid)
			}
		}
		sessions[c.name] = sid
	}
	if got := aliceAgain.call(t, b, "whoami", "{}"); got != sessions["alice"] {
		t.Fatalf("alice with a refreshed token: session %s, want her own %s", got, sessions["alice"])
	}
	if got := aliceS1.call(t, b, "whoami", "{}"); got != sessions["alice's face session 1"] {
		t.Fatalf("alice's face session 1 again: %s, want %s", got, sessions["alice's face session 1"])
	}
	// Per-session state stays the caller's.
	alice.call(t, b, "remember", `{"value":"alice's"}`)
	bob.call(t, b, "remember", `{"value":"bob's"}`)
	if got := aliceAgain.call(t, b, "recall", "{}"); got != "alice's" {
		t.Fatalf("alice recalls %q", got)
	}
	if got := bob.call(t, b, "recall", "{}"); got != "bob's" {
		t.Fatalf("bob recalls %q", got)
	}
	// Reads go to the caller's session too.
	res, err := b.ReadResource(bob.ctx(t), "mem://session")
	if err != nil || !strings.Contains(string(res), sessions["bob"]) {
		t.Fatalf("bob's read: %s, %v (his session %s)", res, err, sessions["bob"])
	}
	_, err = b.CallTool(caller{sub: "anonymous", anonymous: true}.ctx(t), "whoami", json.RawMessage("{}"))
	if codeOf(err) != schemas.CodeAuthentication {
		t.Fatalf("an anonymous stateless caller: %v, want AUTHENTICATION_FAILED", err)
	}
	if n := b.CallerSessionCount()["stateful"]; n != len(sessions) {
		t.Fatalf("%d caller sessions held, want %d", n, len(sessions))
	}
	if st := b.Status()[0]; st.CallerSessions != len(sessions) {
		t.Fatalf("status reports %d caller sessions", st.CallerSessions)
	}
}

// TestCallerAffinityShared: unset, every caller shares the pool's session, as before.
func TestCallerAffinityShared(t *testing.T) {
	f := serveStateful(t, false)
	cfg := callerUpstream(f.url, mcpbackend.CallerSessionsConfig{})
	cfg.SessionAffinity = ""
	cfg.ProtocolVersions = []string{mcp.ProtocolVersion20251125}
	b, _ := start(t, []mcpbackend.Config{cfg})
	pool := callText(t, b, "whoami", "{}")
	for _, c := range []caller{alice, bob, aliceS1} {
		if got := c.call(t, b, "whoami", "{}"); got != pool {
			t.Fatalf("%+v: session %s, want the pool's %s", c, got, pool)
		}
	}
	if n := len(b.CallerSessionCount()); n != 0 {
		t.Fatalf("caller sessions counted for a shared upstream: %v", b.CallerSessionCount())
	}
}

// replicas starts two bridges over one upstream sharing kv, as two gateway replicas.
func replicas(t *testing.T, cfg mcpbackend.Config, kv state.KV) (a, b *mcpbackend.Bridge) {
	a, _ = start(t, []mcpbackend.Config{cfg}, mcpbackend.WithStore(kv))
	b, _ = start(t, []mcpbackend.Config{cfg}, mcpbackend.WithStore(kv))
	return a, b
}

func embedded(t *testing.T) state.KV {
	kv := state.NewEmbedded(state.EmbeddedOptions{})
	t.Cleanup(func() { _ = kv.Close() })
	return kv
}

// TestCallerAffinityAcrossReplicas: a caller's requests on either replica reach one
// upstream session, resumed without a handshake; a forgotten session is replaced once and
// the replacement is what the other replica then resumes.
func TestCallerAffinityAcrossReplicas(t *testing.T) {
	f := serveStateful(t, true)
	a, b := replicas(t, callerUpstream(f.url, mcpbackend.CallerSessionsConfig{}), embedded(t))
	initsBefore := f.initializes()
	onA := alice.call(t, a, "whoami", "{}")
	alice.call(t, a, "remember", `{"value":"kept"}`)
	if got := aliceAgain.call(t, b, "whoami", "{}"); got != onA {
		t.Fatalf("alice on the second replica: session %s, want %s", got, onA)
	}
	if got := alice.call(t, b, "recall", "{}"); got != "kept" {
		t.Fatalf("alice recalls %q on the second replica", got)
	}
	if got := bob.call(t, b, "whoami", "{}"); got == onA {
		t.Fatal("bob got alice's session")
	}
	if n := f.initializes() - initsBefore; n != 2 {
		t.Fatalf("%d initializes for two callers on two replicas, want 2 (the second replica resumes)", n)
	}

	f.sessions.forget()
	renewed := alice.call(t, b, "whoami", "{}")
	if renewed == onA || renewed == "" {
		t.Fatalf("after the upstream forgot it: session %q", renewed)
	}
	if got := alice.call(t, a, "whoami", "{}"); got != renewed {
		t.Fatalf("the first replica after the renewal: %s, want %s", got, renewed)
	}
	if d := f.deleted(); slices.Contains(d, onA) || slices.Contains(d, renewed) {
		t.Fatalf("sessions deleted while in use: %v", d)
	}
}

// TestCallerAffinityIdle: a session no replica used within idle_timeout ends — its record
// removed and the upstream sent DELETE — while one another replica keeps using is only
// dropped from the idle replica.
func TestCallerAffinityIdle(t *testing.T) {
	f := serveStateful(t, true)
	kv := embedded(t)
	idle := 600 * time.Millisecond
	a, b := replicas(t, callerUpstream(f.url, mcpbackend.CallerSessionsConfig{IdleTimeout: idle}), kv)
	sid := alice.call(t, a, "whoami", "{}")
	// b keeps using it: a drops its client without DELETE.
	deadline := time.Now().Add(3 * idle)
	for time.Now().Before(deadline) {
		if got := alice.call(t, b, "whoami", "{}"); got != sid {
			t.Fatalf("alice on b: %s, want %s", got, sid)
		}
		time.Sleep(idle / 6)
	}
	if n := a.CallerSessionCount()["stateful"]; n != 0 {
		t.Fatalf("a still holds %d caller sessions after %v idle", n, 3*idle)
	}
	if d := f.deleted(); slices.Contains(d, sid) {
		t.Fatalf("DELETE sent while another replica used the session: %v", d)
	}
	// Now nobody uses it: it ends, once.
	waitFor(t, 10*idle, "the idle session's DELETE", func() bool { return slices.Contains(f.deleted(), sid) })
	time.Sleep(2 * idle)
	n := 0
	for _, d := range f.deleted() {
		if d == sid {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("DELETE sent %d times for %s: %v", n, sid, f.deleted())
	}
	if n := b.CallerSessionCount()["stateful"]; n != 0 {
		t.Fatalf("b holds %d caller sessions", n)
	}
	if got := alice.call(t, a, "whoami", "{}"); got == sid {
		t.Fatal("the ended session was used again")
	}
}

// TestCallerAffinityMax: past caller_sessions.max the least recently used idle session is
// dropped from the process — kept upstream when recorded, resumed on the caller's next
// call — and a new caller is refused with OVERLOADED while every session is busy.
func TestCallerAffinityMax(t *testing.T) {
	f := serveStateful(t, true)
	b, _ := start(t, []mcpbackend.Config{callerUpstream(f.url, mcpbackend.CallerSessionsConfig{Max: 1})}, mcpbackend.WithStore(embedded(t)))
	sid := alice.call(t, b, "whoami", "{}")
	inits := f.initializes()
	bob.call(t, b, "whoami", "{}") // evicts alice's client here
	if got := alice.call(t, b, "whoami", "{}"); got != sid {
		t.Fatalf("alice after eviction: %s, want her session %s resumed", got, sid)
	}
	if n := f.initializes() - inits; n != 1 {
		t.Fatalf("%d initializes, want 1 (bob's; alice's resumed)", n)
	}
	if d := f.deleted(); slices.Contains(d, sid) {
		t.Fatalf("eviction sent DELETE: %v", d)
	}
	held := make(chan error, 1)
	go func() {
		_, err := b.CallTool(alice.ctx(t), "hold", json.RawMessage("{}"))
		held <- err
	}()
	select {
	case <-f.holding:
	case err := <-held:
		t.Fatalf("hold: %v", err)
	}
	_, err := b.CallTool(bob.ctx(t), "whoami", json.RawMessage("{}"))
	if codeOf(err) != schemas.CodeOverloaded {
		t.Fatalf("bob while alice's session is busy and max is 1: %v, want OVERLOADED", err)
	}
	close(f.release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
}

// TestCallerAffinityPerProcess: without a store the sessions are per process, and an
// idle one ends with DELETE.
func TestCallerAffinityPerProcess(t *testing.T) {
	f := serveStateful(t, true)
	idle := 200 * time.Millisecond
	b, _ := start(t, []mcpbackend.Config{callerUpstream(f.url, mcpbackend.CallerSessionsConfig{IdleTimeout: idle})})
	sid := alice.call(t, b, "whoami", "{}")
	bsid := bob.call(t, b, "whoami", "{}")
	if bsid == sid {
		t.Fatal("bob got alice's session")
	}
	f.sessions.forget() // the upstream restarts: alice's next call starts her a new session
	renewed := alice.call(t, b, "whoami", "{}")
	if renewed == sid || renewed == bsid {
		t.Fatalf("alice after the upstream forgot her session: %s", renewed)
	}
	waitFor(t, 10*idle, "the idle sessions deleted", func() bool {
		return slices.Contains(f.deleted(), renewed) && slices.Contains(f.deleted(), bsid)
	})
}

// TestProbeRecordsVersions: the pool probes server/discover first; a server before
// 2026-07-28 answers initialize only, and one of 2026-07-28 lists its versions. Under
// caller affinity the stateless one keeps its calls on the pool.
func TestProbeRecordsVersions(t *testing.T) {
	for _, tt := range []struct {
		name       string
		legacyOnly bool
		want       mcpbackend.Probe
	}{
		{"2025 only", true, mcpbackend.Probe{Method: "initialize", DiscoverRefused: true, Versions: []string{mcp.ProtocolVersion20251125},
			Negotiated: mcp.ProtocolVersion20251125, Capabilities: []string{"resources", "tools"}}},
		{"2026", false, mcpbackend.Probe{Method: "server/discover", Versions: mcp.ValidProtocolVersions,
			Negotiated: mcp.ProtocolVersion20260728, Capabilities: []string{"resources", "tools"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := serveStateful(t, tt.legacyOnly)
			b, _ := start(t, []mcpbackend.Config{callerUpstream(f.url, mcpbackend.CallerSessionsConfig{})})
			got, ok := b.Probes()["stateful"]
			if !ok {
				t.Fatal("no probe recorded")
			}
			want := tt.want
			if !tt.legacyOnly {
				want.Versions = discoverVersions(t, f.url)
			}
			if gj, wj := mustJSON(t, got), mustJSON(t, want); gj != wj {
				t.Fatalf("probe\n got %s\nwant %s", gj, wj)
			}
			if st := b.Status()[0]; st.Probe == nil || st.Probe.Negotiated != want.Negotiated {
				t.Fatalf("status probe %+v", st.Probe)
			}
			if methods := f.posted(); len(methods) == 0 || methods[0] != string(mcp.MethodServerDiscover) {
				t.Fatalf("first request %v, want server/discover", methods)
			}
			sid := alice.call(t, b, "whoami", "{}")
			pool := callText(t, b, "whoami", "{}")
			switch {
			case tt.legacyOnly && sid == pool:
				t.Fatal("a stateful upstream served alice on the pool's session")
			case !tt.legacyOnly && b.CallerSessionCount()["stateful"] != 0:
				t.Fatal("a stateless upstream got a caller session")
			}
		})
	}
}

// discoverVersions asks the server what server/discover lists.
func discoverVersions(t *testing.T, url string) []string {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "server/discover")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(resp.Body)
	var r struct {
		Result mcp.DiscoverResult `json:"result"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || len(r.Result.SupportedVersions) == 0 {
		t.Fatalf("server/discover: %s", raw)
	}
	return r.Result.SupportedVersions
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAffinityConfig: each key's default, and its edges refused.
func TestAffinityConfig(t *testing.T) {
	base := func(mod func(*mcpbackend.Config)) mcpbackend.Config {
		c := mcpbackend.Config{Name: "u", HTTP: &mcpbackend.HTTPConfig{URL: "http://127.0.0.1:1/mcp"}}
		mod(&c)
		return c
	}
	for _, tt := range []struct {
		name string
		mod  func(*mcpbackend.Config)
		err  string
	}{
		{"unset", func(*mcpbackend.Config) {}, ""},
		{"shared", func(c *mcpbackend.Config) { c.SessionAffinity = "shared" }, ""},
		{"caller", func(c *mcpbackend.Config) { c.SessionAffinity = "caller" }, ""},
		{"unknown mode", func(c *mcpbackend.Config) { c.SessionAffinity = "sticky" }, "session_affinity must be shared or caller"},
		{"max at its ceiling", func(c *mcpbackend.Config) { c.CallerSessions.Max = mcpbackend.MaxCallerSessions }, ""},
		{"max past it", func(c *mcpbackend.Config) { c.CallerSessions.Max = mcpbackend.MaxCallerSessions + 1 }, "caller_sessions: max"},
		{"negative max", func(c *mcpbackend.Config) { c.CallerSessions.Max = -1 }, "caller_sessions: max"},
		{"negative idle", func(c *mcpbackend.Config) { c.CallerSessions.IdleTimeout = -time.Second }, "must not be negative"},
		{"negative ttl", func(c *mcpbackend.Config) { c.CallerSessions.RecordTTL = -time.Second }, "must not be negative"},
		{"ttl equal to idle", func(c *mcpbackend.Config) {
			c.CallerSessions = mcpbackend.CallerSessionsConfig{IdleTimeout: time.Minute, RecordTTL: time.Minute}
		}, ""},
		{"ttl shorter than idle", func(c *mcpbackend.Config) {
			c.CallerSessions = mcpbackend.CallerSessionsConfig{IdleTimeout: time.Minute, RecordTTL: time.Minute - time.Millisecond}
		}, "record_ttl must be at least idle_timeout"},
		{"ttl defaults to at least a long idle", func(c *mcpbackend.Config) {
			c.CallerSessions = mcpbackend.CallerSessionsConfig{IdleTimeout: 2 * time.Hour}
		}, ""},
		{"ttl default shorter than a set idle", func(c *mcpbackend.Config) {
			c.CallerSessions = mcpbackend.CallerSessionsConfig{IdleTimeout: 2 * time.Hour, RecordTTL: time.Hour}
		}, "record_ttl must be at least idle_timeout"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := base(tt.mod).Validate()
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("Validate: %v, want %q", err, tt.err)
			}
		})
	}
}

// TestCallerAffinityConcurrentFirstCalls: a caller's first requests, at once on one
// replica and on two, end on one upstream session: one handshake per replica at most,
// and the replica that lost the race to record its session adopts the winner's.
func TestCallerAffinityConcurrentFirstCalls(t *testing.T) {
	f := serveStateful(t, true)
	a, b := replicas(t, callerUpstream(f.url, mcpbackend.CallerSessionsConfig{}), embedded(t))
	inits := f.initializes()
	const n = 8
	got := make(chan string, 2*n)
	errs := make(chan error, 2*n)
	var wg sync.WaitGroup
	for i := range 2 * n {
		br := a
		if i%2 == 1 {
			br = b
		}
		wg.Go(func() {
			res, err := br.CallTool(alice.ctx(t), "whoami", json.RawMessage("{}"))
			if err != nil {
				errs <- err
				return
			}
			got <- firstText(t, res)
		})
	}
	wg.Wait()
	close(got)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for sid := range got {
		seen[sid]++
	}
	if len(seen) != 1 {
		t.Fatalf("the first calls saw sessions %v, want one", seen)
	}
	if m := f.initializes() - inits; m < 1 || m > 2 {
		t.Fatalf("%d initializes for one caller on two replicas, want 1 or 2", m)
	}
	// Every later request, on either replica, is on the recorded session.
	var want string
	for sid := range seen {
		want = sid
	}
	for range 3 {
		for _, br := range []*mcpbackend.Bridge{a, b} {
			if sid := alice.call(t, br, "whoami", "{}"); sid != want {
				t.Fatalf("alice on %p: %s, want %s", br, sid, want)
			}
		}
	}
}

// TestCallerAffinityStdio: over stdio each caller's session is a child process of its
// own, per process; progress reaches the caller through it, and an idle one is stopped.
func TestCallerAffinityStdio(t *testing.T) {
	cfg := fixture("fx", nil)
	cfg.ProtocolVersions = []string{mcp.ProtocolVersion20251125}
	cfg.SessionAffinity = mcpbackend.AffinityCaller
	idle := 300 * time.Millisecond
	cfg.CallerSessions = mcpbackend.CallerSessionsConfig{IdleTimeout: idle}
	b, _ := start(t, []mcpbackend.Config{cfg}, mcpbackend.WithStore(embedded(t)))
	pool := callText(t, b, "pid", "{}")
	pa, pb := alice.call(t, b, "pid", "{}"), bob.call(t, b, "pid", "{}")
	if pa == pool || pb == pool || pa == pb {
		t.Fatalf("pids: pool %s, alice %s, bob %s; want three children", pool, pa, pb)
	}
	if again := aliceAgain.call(t, b, "pid", "{}"); again != pa {
		t.Fatalf("alice again: pid %s, want %s", again, pa)
	}
	var mu sync.Mutex
	var reports int
	ctx := mcpbackend.WithProgress(alice.ctx(t), func(mcpbackend.Progress) {
		mu.Lock()
		reports++
		mu.Unlock()
	})
	if _, err := b.CallTool(ctx, "progress", json.RawMessage(`{"steps":3}`)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if reports != 3 {
		t.Errorf("%d progress reports through alice's session, want 3", reports)
	}
	mu.Unlock()
	waitFor(t, 20*idle, "the idle children to stop", func() bool { return b.CallerSessionCount()["fx"] == 0 })
	if now := alice.call(t, b, "pid", "{}"); now == pa {
		t.Fatalf("alice after her idle session ended: still pid %s", now)
	}
}

// TestCallerAffinitySSE: over the legacy SSE transport a session cannot be resumed
// elsewhere: each replica gives the caller a session of its own, even with a shared
// store, and an idle one is closed.
func TestCallerAffinitySSE(t *testing.T) {
	s := server.NewMCPServer("sse", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("whoami"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(server.ClientSessionFromContext(ctx).SessionID()), nil
	})
	hs := httptest.NewUnstartedServer(nil)
	base := "http://" + hs.Listener.Addr().String()
	hs.Config.Handler = server.NewSSEServer(s, server.WithBaseURL(base))
	hs.Start()
	t.Cleanup(hs.Close)
	idle := 300 * time.Millisecond
	cfg := fast(mcpbackend.Config{Name: "sse", SSE: &mcpbackend.HTTPConfig{URL: base + "/sse"}, SessionAffinity: mcpbackend.AffinityCaller,
		CallerSessions: mcpbackend.CallerSessionsConfig{IdleTimeout: idle}})
	cfg.Heartbeat = mcpbackend.HeartbeatConfig{Interval: 30 * time.Second, Timeout: 5 * time.Second}
	a, b := replicas(t, cfg, embedded(t))
	pool := callText(t, a, "whoami", "{}")
	onA, onB := alice.call(t, a, "whoami", "{}"), alice.call(t, b, "whoami", "{}")
	if onA == pool || onA == onB {
		t.Fatalf("sessions: pool %s, alice on a %s, on b %s; want three", pool, onA, onB)
	}
	if got := aliceAgain.call(t, a, "whoami", "{}"); got != onA {
		t.Fatalf("alice again on a: %s, want %s", got, onA)
	}
	if got := bob.call(t, a, "whoami", "{}"); got == onA {
		t.Fatal("bob got alice's session")
	}
	waitFor(t, 20*idle, "the idle sessions closed", func() bool {
		return a.CallerSessionCount()["sse"] == 0 && b.CallerSessionCount()["sse"] == 0
	})
}
