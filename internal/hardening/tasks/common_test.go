package tasks

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gatehouse-dev/gatehouse/internal/hardening"
	"github.com/gatehouse-dev/gatehouse/server"
)

// secret signs the callers' tokens (HS256, issuer https://idp.test).
const secret = "level3-tasks-secret-0123456789abcdef0123456789"

// jwtAuth is the auth section: bearer JWTs of one issuer, every subject a principal of its own.
const jwtAuth = `auth:
  jwt:
    issuers:
      - {issuer: "https://idp.test", audiences: [gatehouse], secret: "` + secret + `"}
`

// token is a bearer token for sub.
func token(t testing.TB, sub string, scopes ...string) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"iss": "https://idp.test", "aud": "gatehouse", "sub": sub, "scope": strings.Join(scopes, " "),
		"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix(),
	}).SignedString([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// rpcError is a JSON-RPC error.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// reply is one JSON-RPC response.
type reply struct {
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// poster sends requests to one path of the boundary with a bearer token.
type poster struct {
	c   *http.Client
	url string
	hdr map[string]string
}

// post sends body and returns the response's content type and body; a transport error is
// returned as such (the caller decides whether it may happen).
func (p *poster) post(body string, token string, sse bool) (string, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, p.url, strings.NewReader(body))
	if err != nil {
		return "", nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if sse {
		req.Header.Set("Accept", "text/event-stream")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range p.hdr {
		req.Header.Set(k, v)
	}
	resp, err := p.c.Do(req)
	if err != nil {
		return "", nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", b, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return resp.Header.Get("Content-Type"), b, err
}

// history is the bounded log of the operations of a run and their outcomes, printed when an
// outcome is outside the model's allowed set.
type history struct {
	mu   sync.Mutex
	ops  []string
	seed string
}

const historyLen = 30

func (h *history) addf(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, fmt.Sprintf(format, args...))
	if len(h.ops) > historyLen {
		h.ops = h.ops[len(h.ops)-historyLen:]
	}
}

func (h *history) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return fmt.Sprintf("%s; the last %d operations:\n  %s", h.seed, len(h.ops), strings.Join(h.ops, "\n  "))
}

// seeded returns the run's generator and a history naming its seed. The harness logs the
// seed; the history repeats it beside the failing operations.
func seeded(t *testing.T) (*rand.Rand, *history) {
	t.Helper()
	r := hardening.Rand(t)
	return r, &history{seed: "replay with the seed logged above (GATEHOUSE_FUZZ_SEED)"}
}

// reloader reloads cfg into g every few milliseconds until stop is closed; it counts the
// reloads and fails the test on a refused one.
func reloader(t *testing.T, g *hardening.Gateway, yaml string) (stop func() int) {
	t.Helper()
	if _, err := server.Parse("hardening.yaml", []byte(yaml)); err != nil {
		t.Fatal(err)
	}
	done, finished := make(chan struct{}), make(chan int)
	go func() {
		n := 0
		defer func() { finished <- n }()
		tick := time.NewTicker(15 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				cfg, err := server.Parse("hardening.yaml", []byte(yaml)) // a fresh one each time, as a file reload reads it
				if err == nil {
					err = g.Reload(cfg)
				}
				if err != nil {
					t.Errorf("reload: %v", err)
					return
				}
				n++
			}
		}
	}()
	return func() int { close(done); return <-finished }
}

// counts tallies outcomes by name for the run's log line.
type counts struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *counts) inc(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[k]++
}

func (c *counts) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, _ := json.Marshal(c.m) // sorted keys
	return string(b)
}
