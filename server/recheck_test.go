package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/faces/ws"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/state"
)

// The credentials of long-lived connections are re-checked: a WebSocket, an SSE stream of
// POST /rpc and the event streams of MCP sessions stop when their credential expires or is
// revoked, and no call made on them after that runs (so no hop token is minted for it).

// hopCounter is a target that makes a hop (its token is minted by the key ring) and counts
// the calls that reached it with a minted token: count.scopes answers the caller's scopes,
// count.stream streams one message and then holds the stream open until it is cancelled.
type hopCounter struct{ minted atomic.Int64 }

func (h *hopCounter) Name() string { return "hop-counter" }

func (h *hopCounter) HopAuth(*gateway.Call) gateway.HopAuth {
	return gateway.HopAuth{Mode: gateway.HopMint, Audience: "hop-counter"}
}

func (h *hopCounter) Invoke(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
	if gateway.HopToken(ctx) != "" {
		h.minted.Add(1)
	}
	if call.Method == "count.stream" {
		return &gateway.Result{Stream: &heldStream{}}, nil
	}
	scopes, _ := json.Marshal(call.Principal.Scopes)
	return gateway.NewResult(scopes), nil
}

// heldStream sends one message, then waits for its context.
type heldStream struct{ sent bool }

func (s *heldStream) Recv(ctx context.Context) ([]byte, error) {
	if !s.sent {
		s.sent = true
		return []byte(`{"n":1}`), nil
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

func (s *heldStream) Close() error { return nil }

const recheckRefresh = 200 * time.Millisecond

// recheckYAML serves WebSocket, SSE and the MCP face (with its legacy SSE transport) to
// tokens of the development issuer (leeway 1ms, so a short token ends when it says), with
// a key ring minting hop tokens and the operator's API key for the admin API.
func recheckYAML(t *testing.T) string {
	t.Helper()
	jwks, err := filepath.Abs("../configs/examples/dev-jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
websocket: {}
mcp_face: {session_key: %q}
auth:
  jwt:
    issuers:
      - {issuer: gatehouse-dev, audiences: [gatehouse], jwks_file: %s, leeway: 1ms}
  api_keys:
    - {name: ops, hash: "%s", scopes: [admin.revocations]}
  revocation: {refresh: %s}
  keyring: {issuer: gatehouse, algorithm: EdDSA}
routing:
  demo: {}
log: {level: debug}
`, testSessionKey, jwks, apiKeyHash(opsKey), recheckRefresh)
}

// startRecheck starts a server of recheckYAML on kv (nil: its own) with the counter.
func startRecheck(t *testing.T, kv state.KV, h *hopCounter, now func() time.Time) *testServer {
	t.Helper()
	cfg, err := Parse("test.yaml", []byte(recheckYAML(t)))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return startOptions(t, cfg, Options{State: kv, Now: now,
		Targets: map[string]gateway.Target{"count.scopes": h, "count.stream": h}}, nil)
}

// tokenFor mints a development token of sub with jti and scopes that ends after life.
func tokenFor(t *testing.T, sub, jti string, life time.Duration, scopes ...string) string {
	t.Helper()
	now := time.Now()
	exp := float64(now.Add(life).UnixMilli()) / 1000
	return signDev(t, map[string]any{"iss": "gatehouse-dev", "sub": sub, "aud": "gatehouse", "jti": jti,
		"scope": strings.Join(scopes, " "), "iat": now.Unix() - 1, "exp": exp})
}

// dialBearerWS opens /ws with a bearer token.
func dialBearerWS(t *testing.T, ts *testServer, tok string) *websocket.Conn {
	t.Helper()
	url := "ws" + strings.TrimPrefix(ts.base, "http") + "/ws"
	c, resp, err := websocket.DefaultDialer.Dial(url, http.Header{"Authorization": {"Bearer " + tok}})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	_ = resp.Body.Close()
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// wsCall sends one request and returns its response.
func wsCall(t *testing.T, c *websocket.Conn, id int, method, params string) response {
	t.Helper()
	if params == "" {
		params = "{}"
	}
	wsSend(t, c, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, msg, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		var r response
		if json.Unmarshal(msg, &r) == nil && string(r.ID) == fmt.Sprint(id) {
			return r
		}
	}
}

// wsClosed reads until the connection closes and returns its close frame and how long it
// took; it fails the test after limit.
func wsClosed(t *testing.T, c *websocket.Conn, limit time.Duration) (*websocket.CloseError, time.Duration) {
	t.Helper()
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(limit))
	for {
		if _, _, err := c.ReadMessage(); err != nil {
			ce, ok := errors.AsType[*websocket.CloseError](err)
			if !ok {
				t.Fatalf("connection ended without a close frame after %s: %v", time.Since(start), err)
			}
			return ce, time.Since(start)
		}
	}
}

func wantAuthError(t *testing.T, r response, reason string) {
	t.Helper()
	if r.Error == nil || r.Error.Code != 4001 || r.Error.Data["reason"] != reason {
		t.Fatalf("want 4001 %q, got result %s error %+v", reason, r.Result, r.Error)
	}
}

// TestRecheckWSRevoked: a token revoked on another replica closes an open WebSocket within
// the refresh, with 4001 "credential revoked"; nothing is minted for it after.
func TestRecheckWSRevoked(t *testing.T) {
	kv := state.NewEmbedded(state.EmbeddedOptions{})
	t.Cleanup(func() { _ = kv.Close() })
	h := &hopCounter{}
	a := startRecheck(t, kv, h, nil)
	b := startRecheck(t, kv, &hopCounter{}, nil)
	c := dialBearerWS(t, a, tokenFor(t, "alice", "ws-1", time.Hour, "read"))
	if r := wsCall(t, c, 1, "count.scopes", ""); r.Error != nil || h.minted.Load() != 1 {
		t.Fatalf("before the revocation: %s %+v, %d hop tokens", r.Result, r.Error, h.minted.Load())
	}
	b.ops(auth.MethodRevocationsAdd, `{"jti":"ws-1","ttl":"1h"}`)
	ce, took := wsClosed(t, c, 5*recheckRefresh)
	if ce.Code != ws.CloseCredentialEnded || ce.Text != ws.CloseReasonRevoked {
		t.Fatalf("closed with %d %q, want %d %q", ce.Code, ce.Text, ws.CloseCredentialEnded, ws.CloseReasonRevoked)
	}
	t.Logf("closed %s after the revocation on the other replica", took)
	if n := h.minted.Load(); n != 1 {
		t.Fatalf("%d hop tokens minted, want 1", n)
	}
	waitFor(t, func() bool { return a.wsCount() == 0 && a.liveness.Watching() == 0 })
}

// TestRecheckWSExpiry: an idle connection closes at its token's expiry with 4001 "credential
// expired"; and with a clock moved past the expiry before the timer fires, the next
// message is refused with 4001 "expired" before it runs, minting nothing.
func TestRecheckWSExpiry(t *testing.T) {
	t.Run("timer", func(t *testing.T) {
		ts := startRecheck(t, nil, &hopCounter{}, nil)
		const life = 1500 * time.Millisecond
		start := time.Now()
		c := dialBearerWS(t, ts, tokenFor(t, "alice", "exp-1", life))
		ce, _ := wsClosed(t, c, 10*time.Second)
		took := time.Since(start)
		if ce.Code != ws.CloseCredentialEnded || ce.Text != ws.CloseReasonExpired {
			t.Fatalf("closed with %d %q", ce.Code, ce.Text)
		}
		if took < life-50*time.Millisecond {
			t.Fatalf("closed after %s, before the token's %s", took, life)
		}
		t.Logf("closed %s after the upgrade (token of %s)", took, life)
	})
	t.Run("injected clock", func(t *testing.T) {
		var skew atomic.Int64
		now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
		h := &hopCounter{}
		ts := startRecheck(t, nil, h, now)
		c := dialBearerWS(t, ts, tokenFor(t, "alice", "exp-2", time.Hour, "read"))
		if r := wsCall(t, c, 1, "count.scopes", ""); r.Error != nil {
			t.Fatalf("before expiry: %+v", r.Error)
		}
		skew.Store(int64(2 * time.Hour))
		wantAuthError(t, wsCall(t, c, 2, "count.scopes", ""), string(auth.ReasonExpired))
		ce, _ := wsClosed(t, c, 5*time.Second)
		if ce.Code != ws.CloseCredentialEnded || ce.Text != ws.CloseReasonExpired {
			t.Fatalf("closed with %d %q", ce.Code, ce.Text)
		}
		if n := h.minted.Load(); n != 1 {
			t.Fatalf("%d hop tokens minted, want 1", n)
		}
	})
}

// TestRecheckWSRenew: $/auth/renew replaces the connection's credential without
// reconnecting: the same subject's new token's scopes apply to later calls and its expiry
// replaces the old one; another subject's token is refused and the old credential stays.
func TestRecheckWSRenew(t *testing.T) {
	ts := startRecheck(t, nil, &hopCounter{}, nil)
	c := dialBearerWS(t, ts, tokenFor(t, "alice", "r-1", 1500*time.Millisecond, "read"))
	if r := wsCall(t, c, 1, "count.scopes", ""); string(r.Result) != `["read"]` {
		t.Fatalf("scopes before renewing: %s %+v", r.Result, r.Error)
	}
	renew := func(id int, tok string) response {
		return wsCall(t, c, id, ws.MethodAuthRenew, fmt.Sprintf(`{"token":%q}`, tok))
	}
	r := renew(2, tokenFor(t, "alice", "r-2", time.Hour, "read", "write"))
	var res struct {
		ExpiresAt time.Time `json:"expires_at"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &res) != nil || time.Until(res.ExpiresAt) < 50*time.Minute {
		t.Fatalf("renew: %s %+v", r.Result, r.Error)
	}
	if r := wsCall(t, c, 3, "count.scopes", ""); string(r.Result) != `["read","write"]` {
		t.Fatalf("scopes after renewing: %s %+v", r.Result, r.Error)
	}
	tests := []struct {
		name, tok, reason string
	}{
		{"another subject", tokenFor(t, "mallory", "r-3", time.Hour, "admin"), string(auth.ReasonOtherSubject)},
		{"expired token", tokenFor(t, "alice", "r-4", -time.Minute, "admin"), string(auth.ReasonExpired)},
		{"not a token", "not-a-token", string(auth.ReasonUnknownAPIKey)}, // a bearer that is no JWT is an API key
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantAuthError(t, renew(10+i, tt.tok), tt.reason)
		})
	}
	// The first token's expiry has passed: the renewed credential keeps the connection.
	time.Sleep(time.Until(res.ExpiresAt.Add(-time.Hour + 2*time.Second)))
	if r := wsCall(t, c, 4, "count.scopes", ""); string(r.Result) != `["read","write"]` {
		t.Fatalf("after the first token's expiry: %s %+v", r.Result, r.Error)
	}
}

// sseStream posts a streaming call accepting text/event-stream and returns a reader of its
// events' data lines and the response to close.
func sseStream(t *testing.T, ts *testServer, tok string) (*bufio.Scanner, *http.Response) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.base+"/rpc",
		strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"count.stream","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: HTTP %d", resp.StatusCode)
	}
	return bufio.NewScanner(resp.Body), resp
}

// nextData returns the data of the next event, "" at the end of the stream.
func nextData(sc *bufio.Scanner) string {
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			return d
		}
	}
	return ""
}

// TestRecheckSSE: a streamed result delivered as SSE ends when the caller's credential is
// revoked or expires, with a final JSON-RPC error 4001 event; no hop token is minted after.
func TestRecheckSSE(t *testing.T) {
	tests := []struct {
		name   string
		life   time.Duration
		revoke bool
		reason auth.Reason
	}{
		{"revoked", time.Hour, true, auth.ReasonRevoked},
		{"expired", 1500 * time.Millisecond, false, auth.ReasonExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &hopCounter{}
			ts := startRecheck(t, nil, h, nil)
			tok := tokenFor(t, "alice", "sse-"+tt.name, tt.life, "read")
			sc, _ := sseStream(t, ts, tok)
			if d := nextData(sc); !strings.Contains(d, `"$/stream"`) {
				t.Fatalf("first event: %q", d)
			}
			start := time.Now()
			if tt.revoke {
				ts.ops(auth.MethodRevocationsAdd, `{"jti":"sse-revoked","ttl":"1h"}`)
			}
			final := nextData(sc)
			t.Logf("stream ended %s after %s", time.Since(start), map[bool]string{true: "the revocation", false: "it started"}[tt.revoke])
			wantAuthError(t, decodeOne(t, final), string(tt.reason))
			if rest := nextData(sc); rest != "" {
				t.Fatalf("an event after the final one: %q", rest)
			}
			if code, _, _ := ts.post(`{"jsonrpc":"2.0","id":1,"method":"count.scopes"}`, "Authorization", "Bearer "+tok); code != http.StatusUnauthorized {
				t.Fatalf("a call with the ended credential: HTTP %d", code)
			}
			if n := h.minted.Load(); n != 1 {
				t.Fatalf("%d hop tokens minted, want 1", n)
			}
		})
	}
}

// mcpAs sends one message to /mcp with a bearer token.
func mcpAs(t *testing.T, hc *http.Client, url, tok, method, sid, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tok)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// openStream opens a GET event stream with a bearer token and returns a channel closed
// when the server ends it.
func openStream(t *testing.T, url, tok, sid string) <-chan struct{} {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tok)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	ended := make(chan struct{})
	var once sync.Once
	go func() {
		defer once.Do(func() { close(ended) })
		defer func() { _ = resp.Body.Close() }()
		_, _ = io.Copy(io.Discard, resp.Body)
	}()
	return ended
}

func waitEnded(t *testing.T, ended <-chan struct{}, limit time.Duration, what string) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-ended:
		return time.Since(start)
	case <-time.After(limit):
		t.Fatalf("%s still open after %s", what, limit)
		return 0
	}
}

// TestRecheckMCP: the event streams of an MCP session end when the credential that opened
// them is revoked or expires. A revoked credential's streamable HTTP session is terminated
// (404 from then on, even with another good token of the same subject) and its next call
// is refused before it runs; an expired one's session stays for the refreshed token. A
// legacy SSE session ends with its stream.
func TestRecheckMCP(t *testing.T) {
	ts := startRecheck(t, nil, &hopCounter{}, nil)
	hc := httpClient(t)
	url := ts.base + "/mcp"
	initialize := func(tok string) string {
		t.Helper()
		status, hdr, body := mcpAs(t, hc, url, tok, http.MethodPost, "", initializeBody)
		sid := hdr.Get("Mcp-Session-Id")
		if status != http.StatusOK || sid == "" {
			t.Fatalf("initialize: %d %s", status, body)
		}
		return sid
	}
	t.Run("revoked", func(t *testing.T) {
		tok := tokenFor(t, "alice", "mcp-1", time.Hour)
		sid := initialize(tok)
		ended := openStream(t, url, tok, sid)
		ts.ops(auth.MethodRevocationsAdd, `{"jti":"mcp-1","ttl":"1h"}`)
		t.Logf("stream ended %s after the revocation", waitEnded(t, ended, 5*recheckRefresh, "the session's stream"))
		status, _, body := mcpAs(t, hc, url, tok, http.MethodPost, sid, toolsListBody)
		if status != http.StatusUnauthorized || !strings.Contains(body, `"revoked"`) {
			t.Fatalf("a call with the revoked token: %d %s", status, body)
		}
		fresh := tokenFor(t, "alice", "mcp-2", time.Hour)
		waitFor(t, func() bool {
			status, _, _ := mcpAs(t, hc, url, fresh, http.MethodPost, sid, toolsListBody)
			return status == http.StatusNotFound
		})
		if sid := initialize(fresh); sid == "" {
			t.Fatal("no new session")
		}
	})
	t.Run("expired", func(t *testing.T) {
		tok := tokenFor(t, "alice", "mcp-3", 1500*time.Millisecond)
		sid := initialize(tok)
		ended := openStream(t, url, tok, sid)
		waitEnded(t, ended, 10*time.Second, "the session's stream")
		fresh := tokenFor(t, "alice", "mcp-4", time.Hour)
		if status, _, body := mcpAs(t, hc, url, fresh, http.MethodPost, sid, toolsListBody); status != http.StatusOK {
			t.Fatalf("the session with a refreshed token: %d %s", status, body)
		}
	})
	t.Run("legacy SSE", func(t *testing.T) {
		tok := tokenFor(t, "alice", "mcp-5", time.Hour)
		ended := openStream(t, ts.base+"/sse", tok, "")
		ts.ops(auth.MethodRevocationsAdd, `{"jti":"mcp-5","ttl":"1h"}`)
		waitEnded(t, ended, 5*recheckRefresh, "the legacy SSE stream")
	})
	waitFor(t, func() bool { return ts.liveness.Watching() == 0 })
}
