package server

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/schemas"
)

// keyHash is how auth.api_keys holds a key.
func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// rateLimitConfig limits subtract: free callers once an hour, everyone else twice.
var rateLimitConfig = fmt.Sprintf(`
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
auth:
  anonymous: {}
  api_keys:
    - {name: alice, hash: %q, tier: free}
    - {name: bob, hash: %q, tier: free}
    - {name: carol, hash: %q, tier: gold}
routing:
  demo: {}
rate_limits:
  rules:
    - {name: sub, match: "sub*", rate: 2/h}
    - {name: sub-free, match: "sub*", tier: free, rate: 1/h}
`, keyHash("alice-key"), keyHash("bob-key"), keyHash("carol-key"))

const rlSubtract = `{"jsonrpc":"2.0","method":"subtract","params":[3,1],"id":1}`

// TestRateLimitOverHTTP drives the stage through POST /rpc: tiers and identities get their
// own buckets, a refusal is 5001 with retry_after_ms, and every response carries the
// RateLimit and RateLimit-Policy headers of the rule it drew from.
func TestRateLimitOverHTTP(t *testing.T) {
	ts := start(t, rateLimitConfig, nil)
	type want struct {
		refused bool
		policy  string // RateLimit-Policy
		limit   string // RateLimit
	}
	steps := []struct {
		name, key, body string
		want            want
	}{
		{"alice (free): her one call", "alice-key", rlSubtract, want{false, `"sub-free";q=1;w=3600`, `"sub-free";r=0;t=3600`}},
		{"alice: refused", "alice-key", rlSubtract, want{true, `"sub-free";q=1;w=3600`, `"sub-free";r=0;t=3600`}},
		{"bob (free): his own bucket", "bob-key", rlSubtract, want{false, `"sub-free";q=1;w=3600`, `"sub-free";r=0;t=3600`}},
		{"carol (gold): the any-tier rule", "carol-key", rlSubtract, want{false, `"sub";q=2;w=3600`, `"sub";r=1;t=1800`}},
		{"carol: second of two", "carol-key", rlSubtract, want{false, `"sub";q=2;w=3600`, `"sub";r=0;t=1800`}},
		{"carol: refused", "carol-key", rlSubtract, want{true, `"sub";q=2;w=3600`, `"sub";r=0;t=1800`}},
		{"anonymous (standard tier, by address)", "", rlSubtract, want{false, `"sub";q=2;w=3600`, `"sub";r=1;t=1800`}},
		{"no rule: no headers", "alice-key", `{"jsonrpc":"2.0","method":"sum","params":[1,2],"id":1}`, want{false, "", ""}},
	}
	for _, s := range steps {
		var header []string
		if s.key != "" {
			header = []string{"X-API-Key", s.key}
		}
		status, h, body := ts.post(s.body, header...)
		r := decodeOne(t, body)
		if refused := r.Error != nil; refused != s.want.refused {
			t.Errorf("%s: refused = %v (%s)", s.name, refused, body)
			continue
		}
		if r.Error != nil {
			assertRateLimited(t, s.name, r.Error, h)
			if status != http.StatusTooManyRequests {
				t.Errorf("%s: HTTP %d, want 429", s.name, status)
			}
		}
		if got := h.Get("RateLimit-Policy"); got != s.want.policy {
			t.Errorf("%s: RateLimit-Policy %q, want %q", s.name, got, s.want.policy)
		}
		if got := h.Get("RateLimit"); got != s.want.limit {
			t.Errorf("%s: RateLimit %q, want %q", s.name, got, s.want.limit)
		}
	}
}

// assertRateLimited checks a refusal: 5001 with the rule's name and a retry_after_ms that
// agrees with the RateLimit header's t and with Retry-After (written by retryafter.go).
func assertRateLimited(t *testing.T, name string, e *rpcError, h http.Header) {
	t.Helper()
	ms, ok := e.Data["retry_after_ms"].(float64)
	if e.Code != int(schemas.CodeRateLimited) || !ok || ms <= 0 || e.Data["policy"] == nil {
		t.Errorf("%s: error %+v, want 5001 with retry_after_ms and policy", name, e)
		return
	}
	secs := strconv.FormatInt((int64(ms)+999)/1000, 10)
	if !strings.HasSuffix(h.Get("RateLimit"), ";t="+secs) || h.Get("Retry-After") != secs {
		t.Errorf("%s: RateLimit %q, Retry-After %q; want t=%s and %s as retry_after_ms %v says",
			name, h.Get("RateLimit"), h.Get("Retry-After"), secs, secs, ms)
	}
}

// TestRateLimitBatchHeaders: every batch member takes a token, the members over the limit
// fail alone, and the headers report the draw that left the fewest tokens.
func TestRateLimitBatchHeaders(t *testing.T) {
	ts := start(t, rateLimitConfig, nil)
	batch := `[` + rlSubtract + `,` + strings.Replace(rlSubtract, `"id":1`, `"id":2`, 1) + `,` +
		strings.Replace(rlSubtract, `"id":1`, `"id":3`, 1) + `]`
	_, h, body := ts.post(batch, "X-API-Key", "carol-key")
	refused := 0
	for _, r := range decodeMany(t, body) {
		if r.Error != nil {
			if r.Error.Code != int(schemas.CodeRateLimited) {
				t.Errorf("member failed with %+v", r.Error)
			}
			refused++
		}
	}
	if refused != 1 {
		t.Errorf("%d members refused, want 1 of 3 (burst 2): %s", refused, body)
	}
	if got := h.Get("RateLimit"); !strings.HasPrefix(got, `"sub";r=0;`) {
		t.Errorf("RateLimit %q, want r=0", got)
	}
}

func TestRateLimitConfigErrorsArePositioned(t *testing.T) {
	tests := []struct{ yaml, want string }{
		{"rate_limits:\n  rules:\n    - {match: a, rate: fast}\n", "test.yaml:3:"},
		{"rate_limits:\n  rules:\n    - {match: a, rate: 1/h, burst: 721}\n", "burst 721 at 1/h fills in more than 720h0m0s"},
		{"rate_limits:\n  rules:\n    - {match: a, rate: 1/s}\n    - {match: a, rate: 2/s}\n", "rate_limits.rules[1].match"},
		{"rate_limits:\n  rules:\n    - {match: \"mcp/x\", rate: 1/s}\n", "(set name)"},
		{"rate_limits: {on_store_error: maybe}\n", "test.yaml:1:"},
		{"idempotency: {ttl: 721h}\n", "idempotency.ttl"},
		{"idempotency: {ttl: 1s, poll_interval: 1s}\n", "poll_interval"},
		{"idempotency: {max_result_bytes: 1048543}\n", "test.yaml:1:"},
	}
	for _, tt := range tests {
		_, err := Parse("test.yaml", []byte(tt.yaml))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want an error containing %q", tt.yaml, err, tt.want)
		}
	}
}

// TestRateLimitAnonymousByAddress: anonymous callers over POST /rpc are told apart by their
// address (two loopback addresses here), so one cannot spend another's bucket.
func TestRateLimitAnonymousByAddress(t *testing.T) {
	ts := start(t, rateLimitConfig, nil)
	from := func(ip string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	}
	post := func(c *http.Client) response {
		resp, err := c.Post(ts.base+"/rpc", "application/json", strings.NewReader(rlSubtract))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return decodeOne(t, string(b))
	}
	one, two := from("127.0.0.1"), from("127.0.0.2")
	for i := range 2 {
		if r := post(one); r.Error != nil {
			t.Fatalf("127.0.0.1, call %d: %+v", i+1, r.Error)
		}
	}
	if r := post(one); r.Error == nil || r.Error.Code != int(schemas.CodeRateLimited) {
		t.Fatalf("127.0.0.1 past its burst: %s %+v", r.Result, r.Error)
	}
	if r := post(two); r.Error != nil {
		t.Fatalf("127.0.0.2 was limited by 127.0.0.1's calls: %+v", r.Error)
	}
}
