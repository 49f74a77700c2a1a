package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/faces/httprpc"
	"github.com/gatehouse-dev/gatehouse/internal/hoptest"
	"github.com/gatehouse-dev/gatehouse/internal/mcptest"
)

// callerSecret signs the callers' tokens of the hop tests (issuer https://idp.test).
const callerSecret = "hop-test-secret-0123456789abcdef0123456789"

// callerToken returns an HS256 token of the test identity provider for sub with scopes.
func callerToken(t testing.TB, sub string, scopes ...string) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"iss": "https://idp.test", "aud": "gatehouse", "sub": sub, "scope": strings.Join(scopes, " "),
		"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix(),
	}).SignedString([]byte(callerSecret))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// hopBackend is a calculator gRPC server that verifies every call's hop token against
// the gateway's published JWKS, as a third-party backend would, and records what it saw.
type hopBackend struct {
	addr     string
	verifier atomic.Pointer[hoptest.Verifier] // set once the gateway's JWKS URL is known
	mu       sync.Mutex
	seen     []hopSeen
}

// hopSeen is what the backend saw on one call: the raw authorization metadata and, when it
// verified, the claims.
type hopSeen struct {
	method string
	raw    []string
	claims hoptest.Claims
	err    error
}

// startHopBackend starts the backend; calls before verifyWith are refused.
func startHopBackend(t *testing.T) *hopBackend {
	t.Helper()
	b := &hopBackend{}
	check := func(ctx context.Context, method string) error {
		if strings.HasPrefix(method, "/grpc.reflection.") {
			return nil // the gateway loads descriptors on its own behalf, without a hop token
		}
		md, _ := metadata.FromIncomingContext(ctx)
		s := hopSeen{method: method, raw: md.Get("authorization")}
		v := b.verifier.Load()
		switch {
		case v == nil:
			s.err = fmt.Errorf("no verifier yet")
		case len(s.raw) == 1:
			s.claims, s.err = v.Verify(s.raw[0])
		default:
			s.err = fmt.Errorf("%d authorization values", len(s.raw))
		}
		b.mu.Lock()
		b.seen = append(b.seen, s)
		b.mu.Unlock()
		if s.err != nil && !strings.HasPrefix(method, "/calculator.v1.CalculatorService/Sum") {
			return status.Error(codes.Unauthenticated, s.err.Error())
		}
		return nil // Sum serves callers without a token: the passthrough and none cases
	}
	srv := demo.NewCalculatorServer(
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := check(ctx, info.FullMethod); err != nil {
				return nil, err
			}
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if err := check(ss.Context(), info.FullMethod); err != nil {
				return err
			}
			return h(srv, ss)
		}),
	)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	b.addr = ln.Addr().String()
	return b
}

// verifyWith makes the backend verify hop tokens with the JWKS at url, for audience.
func (b *hopBackend) verifyWith(t *testing.T, url, audience string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	v, err := hoptest.NewVerifier(ctx, url, "gatehouse", audience, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	b.verifier.Store(v)
}

// last returns what the backend saw on its latest call of method (a suffix).
func (b *hopBackend) last(t *testing.T, method string) hopSeen {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range slices.Backward(b.seen) {
		if strings.HasSuffix(s.method, method) {
			return s
		}
	}
	t.Fatalf("the backend saw no %s call", method)
	return hopSeen{}
}

// buildHopServer builds internal/hoptest/hopserver into dir.
func buildHopServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hopserver")
	cmd := exec.Command("go", "build", "-o", bin, "./internal/hoptest/hopserver")
	cmd.Dir = mcptest.RepoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building hopserver: %v\n%s", err, out)
	}
	return bin
}

// startHopHTTP runs hopserver over streamable HTTP and returns its URL.
func startHopHTTP(t *testing.T, bin string, env ...string) string {
	t.Helper()
	cmd := exec.Command(bin, "http")
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		t.Fatalf("hopserver http: %q, %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return "http://" + addr + "/mcp"
}

// hopConfig: JWT callers of https://idp.test; a generated key ring; the calculator backend
// three times — minting (audience calc), passing the caller's token through, and with no
// credential; hopserver over stdio and over HTTP; a policy narrowing each target's scopes.
const hopConfig = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth:
  jwt:
    issuers:
      - {issuer: "https://idp.test", audiences: [gatehouse], secret: %[1]q}
  keyring: {issuer: gatehouse, algorithm: EdDSA%[5]s}
log: {level: debug}
routing:
  grpc:
    - name: calculator
      address: %[2]q
      descriptors: {reflection: true}
      methods: {subtract: calculator.v1.CalculatorService/Subtract}
      unwrap: {subtract: result}
      downstream_token: {audience: calc}
    - name: calc-pass
      address: %[2]q
      descriptors: {reflection: true}
      methods: {pass.sum: calculator.v1.CalculatorService/Sum}
      unwrap: {pass.sum: result}
      downstream_token: {mode: passthrough}
    - name: calc-none
      address: %[2]q
      descriptors: {reflection: true}
      methods: {none.sum: calculator.v1.CalculatorService/Sum}
      unwrap: {none.sum: result}
      downstream_token: {mode: none}
  mcp:
    direct_zones: [external]
    servers:
      - name: hopstdio
        names: {mode: always}
        stdio: {command: %[3]q, args: [stdio], env: {HOP_JWKS_URL_FILE: %[4]q, HOP_AUDIENCE: hopstdio}}
      - name: hophttp
        names: {mode: always}
        http: {url: %[6]q}
        downstream_token: {audience: hop-http}
policy:
  zones:
    external: {reach: [grpc, mcp]}
  rules:
    - {id: subtract, match: {method: subtract}, scopes: ["calc:read"], mutation: READ_ONLY}
    - {id: sums, match: {grpc_method: calculator.v1.CalculatorService/Sum}, scopes: ["calc:read"], mutation: READ_ONLY}
    - {id: stdio, match: {mcp_tool: hopstdio/whoami}, scopes: ["tools:read"], mutation: READ_ONLY}
    - {id: http, match: {mcp_tool: hophttp/whoami}, scopes: ["tools:read"], mutation: READ_ONLY}
`

// hopGateway starts the gateway of hopConfig with keyring options extra (", key: value…")
// and returns it with its backend, once the hop servers know its JWKS URL.
func hopGateway(t *testing.T, ringExtra string) (*testServer, *hopBackend) {
	t.Helper()
	backend := startHopBackend(t)
	bin := buildHopServer(t)
	urlFile := filepath.Join(t.TempDir(), "jwks-url")
	httpURL := startHopHTTP(t, bin, "HOP_JWKS_URL_FILE="+urlFile, "HOP_AUDIENCE=hop-http")
	ts := start(t, fmt.Sprintf(hopConfig, callerSecret, backend.addr, bin, urlFile, ringExtra, httpURL), nil)
	jwks := ts.base + httprpc.JWKSPath
	if err := os.WriteFile(urlFile, []byte(jwks), 0o600); err != nil {
		t.Fatal(err)
	}
	backend.verifyWith(t, jwks, "calc")
	ts.waitReadyWithin(30 * time.Second)
	return ts, backend
}

// TestHopTokensEndToEnd: a JWT caller's calls reach a gRPC backend and MCP servers over
// stdio and HTTP, each of which verifies the token the gateway minted for its hop with
// nothing but the published JWKS: sub = the caller, act = the gateway, aud = that target,
// scopes = the caller's ∩ the target's rule, a lifetime within the call's deadline, a
// fresh jti per hop — and never the caller's own token, unless a backend says passthrough.
func TestHopTokensEndToEnd(t *testing.T) {
	ts, backend := hopGateway(t, "")
	caller := callerToken(t, "alice", "calc:read", "calc:write", "tools:read", "unrelated")
	auth := []string{"Authorization", "Bearer " + caller}

	t.Run("gRPC backend", func(t *testing.T) {
		deadline := time.Now().Add(20 * time.Second)
		_, _, body := ts.post(`{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}`,
			append(auth, "X-Deadline-Ms", fmt.Sprint(deadline.UnixMilli()))...)
		if r := decodeOne(t, body); r.Error != nil || string(r.Result) != "19" {
			t.Fatalf("subtract: %s", body)
		}
		s := backend.last(t, "/Subtract")
		if s.err != nil {
			t.Fatalf("the backend refused the hop token: %v", s.err)
		}
		c := s.claims
		if c.Subject != "alice" || !slices.Equal(c.Audience, []string{"calc"}) || !slices.Equal(c.Scopes, []string{"calc:read"}) ||
			c.Actor["sub"] != "gatehouse" || c.Lifetime <= 0 || c.Lifetime > 20*time.Second {
			t.Fatalf("hop claims %+v", c)
		}
		if s.raw[0] == "Bearer "+caller {
			t.Fatal("the caller's token was forwarded")
		}
		_, _, _ = ts.post(`{"jsonrpc":"2.0","method":"subtract","params":[2,1],"id":2}`, auth...)
		if again := backend.last(t, "/Subtract"); again.err != nil || again.claims.ID == c.ID {
			t.Fatalf("a second hop: jti %q after %q, %v", again.claims.ID, c.ID, again.err)
		}
	})

	t.Run("passthrough and none", func(t *testing.T) {
		_, _, body := ts.post(`{"jsonrpc":"2.0","method":"pass.sum","params":{"values":[1,2]},"id":3}`, auth...)
		if r := decodeOne(t, body); r.Error != nil {
			t.Fatalf("pass.sum: %s", body)
		}
		if s := backend.last(t, "/Sum"); !slices.Equal(s.raw, []string{"Bearer " + caller}) {
			t.Fatalf("passthrough carried %d values, not the caller's token", len(s.raw))
		}
		_, _, body = ts.post(`{"jsonrpc":"2.0","method":"none.sum","params":{"values":[1,2]},"id":4}`, auth...)
		if r := decodeOne(t, body); r.Error != nil {
			t.Fatalf("none.sum: %s", body)
		}
		if s := backend.last(t, "/Sum"); len(s.raw) != 0 {
			t.Fatalf("mode none carried %d authorization values", len(s.raw))
		}
	})

	for _, tt := range []struct{ name, method, aud string }{
		{"MCP server over stdio", "mcp.hopstdio__whoami", "hopstdio"},
		{"MCP server over HTTP", "mcp.hophttp__whoami", "hop-http"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var r response
			waitFor(t, func() bool { // the upstream's catalog may still be loading
				_, _, body := ts.post(`{"jsonrpc":"2.0","method":"`+tt.method+`","params":{},"id":5}`, auth...)
				r = decodeOne(t, body)
				return r.Error == nil || r.Error.Code != -32002
			})
			var res struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
				IsError bool `json:"isError"`
			}
			if r.Error != nil || json.Unmarshal(r.Result, &res) != nil || len(res.Content) != 1 || res.IsError {
				t.Fatalf("%s: %+v %s", tt.method, r.Error, r.Result)
			}
			var c hoptest.Claims
			if err := json.Unmarshal([]byte(res.Content[0].Text), &c); err != nil {
				t.Fatal(err)
			}
			if c.Subject != "alice" || !slices.Equal(c.Audience, []string{tt.aud}) || !slices.Equal(c.Scopes, []string{"tools:read"}) ||
				c.Actor["sub"] != "gatehouse" {
				t.Fatalf("hop claims %+v", c)
			}
		})
	}

	t.Run("a caller without the rule's scopes never reaches the backend", func(t *testing.T) {
		_, _, body := ts.post(`{"jsonrpc":"2.0","method":"subtract","params":[2,1],"id":6}`,
			"Authorization", "Bearer "+callerToken(t, "bob", "tools:read"))
		if r := decodeOne(t, body); r.Error == nil || r.Error.Code != 4002 {
			t.Fatalf("subtract without calc:read: %s", body)
		}
	})
}

// TestHopTokensSurviveRotation: under steady load, the key ring rotates twice (publishing
// each key ahead of its use, keeping the old one through the overlap) and not one call
// fails at a backend that refreshes the published JWKS on its own schedule.
func TestHopTokensSurviveRotation(t *testing.T) {
	if testing.Short() {
		t.Skip("rotation under load runs for seconds")
	}
	ts, backend := hopGateway(t, ", rotate_every: 2s, publish_ahead: 1s, max_token_ttl: 2s, overlap: 3s, sync_interval: 100ms")
	auth := []string{"Authorization", "Bearer " + callerToken(t, "alice", "calc:read")}
	stop := time.Now().Add(5 * time.Second)
	var calls, failed atomic.Int64
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; time.Now().Before(stop); i++ {
				_, _, body := ts.post(fmt.Sprintf(`{"jsonrpc":"2.0","method":"subtract","params":[%d,1],"id":%d}`, i+1, w), auth...)
				calls.Add(1)
				if r := decodeOne(t, body); r.Error != nil || string(r.Result) != fmt.Sprint(i) {
					failed.Add(1)
					t.Errorf("call %d of worker %d: %s", i, w, body)
				}
			}
		})
	}
	wg.Wait()
	kids := map[string]bool{}
	backend.mu.Lock()
	for _, s := range backend.seen {
		if s.err == nil {
			kids[s.claims.KeyID] = true
		}
	}
	backend.mu.Unlock()
	t.Logf("%d calls, %d failed, %d signing keys seen", calls.Load(), failed.Load(), len(kids))
	if len(kids) < 2 {
		t.Fatalf("the ring signed with %d keys in 5 s of rotate_every 2s", len(kids))
	}
}
