package resilience_test

import (
	"context"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// TestBucketBurstAndRefill walks one bucket of 3 tokens, one every 100ms, through its edges
// on an injected clock: the burst, the refusal right after it, refill to the nanosecond,
// and a full bucket again after an idle spell.
func TestBucketBurstAndRefill(t *testing.T) {
	clk := newClock()
	kv := newKV(t, clk)
	b := resilience.NewKVBuckets(kv)
	shape := resilience.Bucket{Interval: 100 * time.Millisecond, Burst: 3}
	steps := []struct {
		name       string
		advance    time.Duration
		allowed    bool
		remaining  int64
		reset      time.Duration
		retryAfter time.Duration
	}{
		{"first of the burst", 0, true, 2, 100 * time.Millisecond, 0},
		{"second of the burst", 0, true, 1, 100 * time.Millisecond, 0},
		{"last of the burst", 0, true, 0, 100 * time.Millisecond, 0},
		{"one past the burst is refused", 0, false, 0, 100 * time.Millisecond, 100 * time.Millisecond},
		{"a nanosecond before the refill", 100*time.Millisecond - 1, false, 0, 1, 1},
		{"exactly at the refill", 1, true, 0, 100 * time.Millisecond, 0},
		{"half an interval later", 50 * time.Millisecond, false, 0, 50 * time.Millisecond, 50 * time.Millisecond},
		{"idle until full again: the whole burst", time.Second, true, 2, 100 * time.Millisecond, 0},
		{"burst again", 0, true, 1, 100 * time.Millisecond, 0},
		{"burst again, empty", 0, true, 0, 100 * time.Millisecond, 0},
		{"a token and a half refilled: one taken, half a token left", 150 * time.Millisecond, true, 0, 50 * time.Millisecond, 0},
		{"the half refilled: taken", 50 * time.Millisecond, true, 0, 100 * time.Millisecond, 0},
	}
	for _, s := range steps {
		clk.Add(s.advance)
		d, err := b.Take(context.Background(), "k", shape, clk.Now())
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		want := resilience.Draw{Allowed: s.allowed, Remaining: s.remaining, Reset: s.reset, RetryAfter: s.retryAfter}
		if d != want {
			t.Errorf("%s: got %+v, want %+v", s.name, d, want)
		}
	}
}

// TestBucketStateExpiresWhenFull checks that a bucket's entry lives exactly until the
// bucket would be full again, so idle buckets cost no memory.
func TestBucketStateExpiresWhenFull(t *testing.T) {
	clk := newClock()
	kv := newKV(t, clk)
	b := resilience.NewKVBuckets(kv)
	shape := resilience.Bucket{Interval: time.Second, Burst: 5}
	for range 2 {
		if _, err := b.Take(context.Background(), "k", shape, clk.Now()); err != nil {
			t.Fatal(err)
		}
	}
	clk.Add(2*time.Second - 1)
	if _, ok, _ := kv.Get(context.Background(), "k"); !ok {
		t.Fatal("the entry expired before the bucket was full")
	}
	clk.Add(1)
	if _, ok, _ := kv.Get(context.Background(), "k"); ok {
		t.Fatal("the entry outlived the bucket being full")
	}
}

// TestBucketConcurrentDrawsNeverExceedBurst: at one instant, of many concurrent draws
// exactly burst are allowed, whatever the compare-and-swap contention.
func TestBucketConcurrentDrawsNeverExceedBurst(t *testing.T) {
	clk := newClock()
	b := resilience.NewKVBuckets(newKV(t, clk))
	shape := resilience.Bucket{Interval: time.Hour, Burst: 10}
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for range 8 {
		wg.Go(func() {
			for range 10 {
				d, err := b.Take(context.Background(), "k", shape, clk.Now())
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if allowed != 10 {
		t.Errorf("%d draws allowed, want exactly the burst, 10", allowed)
	}
}

// TestBucketOverwritesGarbage: a value that is not a TAT reads as a full bucket and is
// replaced.
func TestBucketOverwritesGarbage(t *testing.T) {
	clk := newClock()
	kv := newKV(t, clk)
	if err := kv.Set(context.Background(), "k", []byte("07"), time.Hour); err != nil {
		t.Fatal(err)
	}
	d, err := resilience.NewKVBuckets(kv).Take(context.Background(), "k", resilience.Bucket{Interval: time.Second, Burst: 2}, clk.Now())
	if err != nil || !d.Allowed || d.Remaining != 1 {
		t.Fatalf("got %+v, %v; want allowed with 1 left", d, err)
	}
	if v, _, _ := kv.Get(context.Background(), "k"); string(v) == "07" {
		t.Error("the garbage value was kept")
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		rate     string
		interval time.Duration // of the compiled rule; 0: refused
	}{
		{"10/s", 100 * time.Millisecond},
		{"600/m", 100 * time.Millisecond},
		{"1/h", time.Hour},
		{"5/250ms", 50 * time.Millisecond},
		{"100/10s", 100 * time.Millisecond},
		{"3/1.5s", 500 * time.Millisecond},
		{"1000000000/s", time.Nanosecond},
		{"1/24h", 24 * time.Hour},
		{"1/24h1ns", 0}, // past the longest period
		{"2/1h30m", 45 * time.Minute},
		{"1000000001/h", 0}, // past the largest count
		{"2/1ns", 0},        // faster than one a nanosecond
		{"0/s", 0},          // no calls at all
		{"10/d", 0},         // not a Go unit
		{"10 / s", 0},       // spaces
		{"10s", 0},          // no count
		{"-1/s", 0},         // negative
		{"10/0s", 0},        // empty period
		{"01/s", 0},         // leading zero
		{"10/s,20/m", 0},    // one rate per rule
		{"1.5/s", 0},        // whole calls only
		{"10/" + "s\n", 0},  // trailing garbage
		{strings.Repeat("9", 11) + "/s", 0},
	}
	for _, tt := range tests {
		t.Run(tt.rate, func(t *testing.T) {
			cfg := resilience.RateLimitConfig{Rules: []resilience.RateLimitRule{{Rate: tt.rate, Burst: 1}}}
			errs := cfg.Validate()
			if tt.interval == 0 {
				if len(errs) != 1 || errs[0].Path != "rules[0].rate" {
					t.Fatalf("got %v, want one problem at rules[0].rate", errs)
				}
				return
			}
			if len(errs) > 0 {
				t.Fatalf("refused: %v", errs)
			}
			assertInterval(t, cfg, tt.interval)
		})
	}
}

// assertInterval checks the interval of cfg's only rule: a burst-1 bucket refuses a second
// call for exactly that long.
func assertInterval(t *testing.T, cfg resilience.RateLimitConfig, want time.Duration) {
	t.Helper()
	clk := newClock()
	var got []resilience.Quota
	l, err := resilience.NewRateLimiter(cfg, resilience.NewKVBuckets(newKV(t, clk)), clk.Now, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	h := gateway.Chain((&counter{}).handle, l.Middleware())
	ctx := resilience.WithQuotaReport(context.Background(), func(q resilience.Quota) { got = append(got, q) })
	for range 2 {
		_, _ = h(ctx, caller("m", "alice", ""))
	}
	if len(got) != 2 || got[1].RetryAfter != want {
		t.Errorf("interval: got %+v, want a refusal of %s", got, want)
	}
}

func TestRateLimitConfigProblems(t *testing.T) {
	rule := func(match, tier, rate string) resilience.RateLimitRule {
		return resilience.RateLimitRule{Match: match, Tier: tier, Rate: rate}
	}
	tests := []struct {
		name string
		cfg  resilience.RateLimitConfig
		want []string // paths of the problems
	}{
		{"empty section", resilience.RateLimitConfig{}, nil},
		{"good rules", resilience.RateLimitConfig{Rules: []resilience.RateLimitRule{rule("calc.*", "", "10/s"), rule("calc.*", "free", "1/s")}}, nil},
		{"bad on_store_error", resilience.RateLimitConfig{OnStoreError: "ignore"}, []string{"on_store_error"}},
		{"same match and tier twice", resilience.RateLimitConfig{Rules: []resilience.RateLimitRule{
			rule("calc.*", "free", "10/s"), {Name: "other", Match: "calc.*", Tier: "free", Rate: "1/s"}}}, []string{"rules[1].match"}},
		{"same name twice", resilience.RateLimitConfig{Rules: []resilience.RateLimitRule{
			{Name: "x", Match: "a", Rate: "1/s"}, {Name: "x", Match: "b", Rate: "1/s"}}}, []string{"rules[1].name"}},
		{"default name taken", resilience.RateLimitConfig{Rules: []resilience.RateLimitRule{
			rule("a", "", "1/s"), {Name: "a", Match: "b", Rate: "1/s"}}}, []string{"rules[1].name"}},
		{"match unfit for a name", resilience.RateLimitConfig{Rules: []resilience.RateLimitRule{rule("mcp/tool", "", "1/s")}}, []string{"rules[0].match"}},
		{"name unfit", resilience.RateLimitConfig{Rules: []resilience.RateLimitRule{{Name: `a"b`, Match: "a", Rate: "1/s"}}}, []string{"rules[0].name"}},
		{"negative burst", resilience.RateLimitConfig{Rules: []resilience.RateLimitRule{{Match: "a", Rate: "1/s", Burst: -1}}}, []string{"rules[0].burst"}},
		{"bucket filling for over 30 days", resilience.RateLimitConfig{Rules: []resilience.RateLimitRule{{Match: "a", Rate: "1/h", Burst: 721}}}, []string{"rules[0].burst"}},
		{"bucket filling in exactly 30 days", resilience.RateLimitConfig{Rules: []resilience.RateLimitRule{{Match: "a", Rate: "1/h", Burst: 720}}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range tt.cfg.Validate() {
				got = append(got, p.Path)
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("problems at %v, want %v (%v)", got, tt.want, tt.cfg.Validate())
			}
		})
	}
}

// TestRateLimitMostSpecificRule checks which rule a call draws from, by the policy name
// its quota report carries.
func TestRateLimitMostSpecificRule(t *testing.T) {
	cfg := resilience.RateLimitConfig{Rules: []resilience.RateLimitRule{
		{Name: "all", Match: "*", Rate: "100/s"},
		{Name: "all-free", Match: "*", Tier: "free", Rate: "10/s"},
		{Name: "calc", Match: "calc.*", Rate: "50/s"},
		{Name: "calc-free", Match: "calc.*", Tier: "free", Rate: "5/s"},
		{Name: "calc-add", Match: "calc.add", Rate: "1/s"},
		{Name: "calc-mul-gold", Match: "calc.mul", Tier: "gold", Rate: "1000/s"},
		{Name: "calc-a", Match: "calc.a??", Rate: "2/s"},
		{Name: "report", Match: "report?", Rate: "3/s"},
		{Name: "x-first", Match: "x.*y", Rate: "1/s"},
		{Name: "x-second", Match: "x*.y", Rate: "1/s"},
	}}
	tests := []struct {
		method, tier string
		want         string // "" = no rule
	}{
		{"calc.add", "free", "calc-add"},      // an exact pattern beats every glob, for every tier
		{"calc.add", "gold", "calc-add"},      //
		{"calc.and", "gold", "calc-a"},        // more literal characters win: calc.a?? over calc.*
		{"calc.sub", "free", "calc-free"},     // same pattern: the caller's tier beats any tier
		{"calc.sub", "gold", "calc"},          // no rule for gold on calc.*: the any-tier one
		{"calc.mul", "gold", "calc-mul-gold"}, // an exact rule of the caller's tier
		{"calc.mul", "free", "calc-free"},     // an exact rule of another tier does not apply
		{"reports", "", "report"},             // ? is one character
		{"report", "", "all"},                 // … not zero
		{"other", "free", "all-free"},         //
		{"other", "", "all"},                  // no tier: only any-tier rules
		{"x.a.y", "", "x-first"},              // equal specificity: the rule written first
		{"calc.ädd", "", "calc"},              // wildcards match runes
		{"", "", "all"},                       //
	}
	l, err := resilience.NewRateLimiter(cfg, resilience.NewKVBuckets(newKV(t, newClock())), newClock().Now, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	h := gateway.Chain((&counter{}).handle, l.Middleware())
	for _, tt := range tests {
		t.Run(tt.method+"@"+tt.tier, func(t *testing.T) {
			got := ""
			ctx := resilience.WithQuotaReport(context.Background(), func(q resilience.Quota) { got = q.Policy })
			if _, err := h(ctx, caller(tt.method, tt.method+"@"+tt.tier, tt.tier)); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("rule %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("no rule matches: not limited", func(t *testing.T) {
		cfg := resilience.RateLimitConfig{Rules: []resilience.RateLimitRule{{Match: "calc.*", Rate: "1/h"}}}
		l, err := resilience.NewRateLimiter(cfg, resilience.NewKVBuckets(newKV(t, newClock())), newClock().Now, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		h := gateway.Chain((&counter{}).handle, l.Middleware())
		for range 3 {
			if _, err := h(context.Background(), caller("other", "alice", "")); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestRateLimitIdentities checks that every caller has its own buckets: subjects, anonymous
// callers by address (IPv6 by /64), anonymous callers without an address as one.
func TestRateLimitIdentities(t *testing.T) {
	addr := func(s string) context.Context {
		return resilience.WithClientAddr(context.Background(), netip.MustParseAddr(s))
	}
	bg := context.Background()
	tests := []struct {
		name        string
		first, then func() (context.Context, *gateway.Call)
		shared      bool
	}{
		{"two subjects", func() (context.Context, *gateway.Call) { return bg, caller("m", "alice", "") },
			func() (context.Context, *gateway.Call) { return bg, caller("m", "bob", "") }, false},
		{"one subject, two tiers", func() (context.Context, *gateway.Call) { return bg, caller("m", "alice", "free") },
			func() (context.Context, *gateway.Call) { return bg, caller("m", "alice", "gold") }, true},
		{"one subject, two addresses", func() (context.Context, *gateway.Call) { return addr("10.0.0.1"), caller("m", "alice", "") },
			func() (context.Context, *gateway.Call) { return addr("10.0.0.2"), caller("m", "alice", "") }, true},
		{"anonymous, two IPv4 addresses", func() (context.Context, *gateway.Call) { return addr("10.0.0.1"), anonymous("m") },
			func() (context.Context, *gateway.Call) { return addr("10.0.0.2"), anonymous("m") }, false},
		{"anonymous, IPv4 and the same mapped in IPv6", func() (context.Context, *gateway.Call) { return addr("10.0.0.1"), anonymous("m") },
			func() (context.Context, *gateway.Call) { return addr("::ffff:10.0.0.1"), anonymous("m") }, true},
		{"anonymous, one IPv6 /64", func() (context.Context, *gateway.Call) { return addr("2001:db8::1"), anonymous("m") },
			func() (context.Context, *gateway.Call) { return addr("2001:db8::ffff:2"), anonymous("m") }, true},
		{"anonymous, two IPv6 /64s", func() (context.Context, *gateway.Call) { return addr("2001:db8::1"), anonymous("m") },
			func() (context.Context, *gateway.Call) { return addr("2001:db8:0:1::1"), anonymous("m") }, false},
		{"anonymous without an address", func() (context.Context, *gateway.Call) { return bg, anonymous("m") },
			func() (context.Context, *gateway.Call) { return bg, anonymous("m") }, true},
		{"a subject is not an anonymous address", func() (context.Context, *gateway.Call) { return addr("10.0.0.1"), anonymous("m") },
			func() (context.Context, *gateway.Call) { return bg, caller("m", "a:10.0.0.1", "") }, false},
		{"a long subject", func() (context.Context, *gateway.Call) { return bg, caller("m", strings.Repeat("s", 300), "") },
			func() (context.Context, *gateway.Call) { return bg, caller("m", strings.Repeat("s", 301), "") }, false},
	}
	cfg := resilience.RateLimitConfig{Rules: []resilience.RateLimitRule{{Match: "*", Rate: "1/h"}}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			l, err := resilience.NewRateLimiter(cfg, resilience.NewKVBuckets(newKV(t, clk)), clk.Now, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			h := gateway.Chain((&counter{}).handle, l.Middleware())
			if _, err := h(tt.first()); err != nil {
				t.Fatal(err)
			}
			_, err = h(tt.then())
			if refused := err != nil; refused != tt.shared {
				t.Errorf("second caller refused = %v (%v), want %v", refused, err, tt.shared)
			}
		})
	}
}

// TestRateLimitRefusal checks the error of an empty bucket and that the call goes no further.
func TestRateLimitRefusal(t *testing.T) {
	clk := newClock()
	cfg := resilience.RateLimitConfig{Rules: []resilience.RateLimitRule{{Name: "calc", Match: "calc.*", Rate: "2/s", Burst: 2}}}
	l, err := resilience.NewRateLimiter(cfg, resilience.NewKVBuckets(newKV(t, clk)), clk.Now, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	c := &counter{}
	h := gateway.Chain(c.handle, l.Middleware())
	var last resilience.Quota
	ctx := resilience.WithQuotaReport(context.Background(), func(q resilience.Quota) { last = q })
	for range 2 {
		if _, err := h(ctx, caller("calc.add", "alice", "")); err != nil {
			t.Fatal(err)
		}
	}
	clk.Add(100 * time.Millisecond)
	_, err = h(ctx, caller("calc.add", "alice", ""))
	ge := gateway.AsError(err)
	if ge == nil || ge.Code() != schemas.CodeRateLimited || ge.Data()["retry_after_ms"] != int64(400) || ge.Data()["policy"] != "calc" {
		t.Fatalf("got %v %v, want RATE_LIMITED with retry_after_ms 400 and policy calc", err, ge.Data())
	}
	if c.n.Load() != 2 {
		t.Errorf("the refused call reached the next stage (%d calls)", c.n.Load())
	}
	want := resilience.Quota{Policy: "calc", Limit: 2, Window: time.Second, Remaining: 0, Reset: 400 * time.Millisecond, RetryAfter: 400 * time.Millisecond}
	if last != want {
		t.Errorf("quota %+v, want %+v", last, want)
	}
}

// TestRateLimitStoreFailure checks on_store_error: allow lets the call run, deny refuses it.
func TestRateLimitStoreFailure(t *testing.T) {
	for _, mode := range []string{"", resilience.StoreErrorAllow, resilience.StoreErrorDeny} {
		t.Run("mode "+mode, func(t *testing.T) {
			cfg := resilience.RateLimitConfig{OnStoreError: mode, Rules: []resilience.RateLimitRule{{Match: "*", Rate: "1/s"}}}
			var logs strings.Builder
			l, err := resilience.NewRateLimiter(cfg, resilience.NewKVBuckets(failingKV{}), newClock().Now, slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			c := &counter{}
			_, err = gateway.Chain(c.handle, l.Middleware())(context.Background(), caller("m", "alice", ""))
			if mode == resilience.StoreErrorDeny {
				if ge := gateway.AsError(err); ge == nil || ge.Code() != schemas.CodeUnavailable || ge.Data()["retry_after_ms"] == nil || c.n.Load() != 0 {
					t.Fatalf("got %v, want UNAVAILABLE with retry_after_ms and no call", err)
				}
			} else if err != nil || c.n.Load() != 1 {
				t.Fatalf("got %v, want the call to run", err)
			}
			if !strings.Contains(logs.String(), "store down") {
				t.Errorf("the failure was not logged: %q", logs.String())
			}
		})
	}
}

func TestNewRateLimiterRefusesBadConfig(t *testing.T) {
	_, err := resilience.NewRateLimiter(resilience.RateLimitConfig{Rules: []resilience.RateLimitRule{{Rate: "fast"}}}, nil, time.Now, nil)
	if err == nil || !strings.Contains(err.Error(), "rules[0].rate") {
		t.Fatalf("got %v", err)
	}
}

// BenchmarkRateLimitStage measures the stage's cost per call against a pass-through stage;
// report the ratio of the two ns/op.
func BenchmarkRateLimitStage(b *testing.B) {
	clk := newClock()
	cfg := resilience.RateLimitConfig{Rules: []resilience.RateLimitRule{
		{Match: "*", Rate: "1000000000/s"}, {Match: "calc.*", Rate: "1000000000/s"}, {Match: "calc.add", Tier: "gold", Rate: "1000000000/s"},
	}}
	l, err := resilience.NewRateLimiter(cfg, resilience.NewKVBuckets(newKV(b, clk)), clk.Now, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	terminal := func(context.Context, *gateway.Call) (*gateway.Result, error) { return gateway.NewResult(nil), nil }
	pass := func(next gateway.Handler) gateway.Handler {
		return func(ctx context.Context, c *gateway.Call) (*gateway.Result, error) { return next(ctx, c) }
	}
	for _, bm := range []struct {
		name string
		mw   gateway.Middleware
	}{{"pass-through", pass}, {"rate-limit", l.Middleware()}} {
		b.Run(bm.name, func(b *testing.B) {
			h := gateway.Chain(terminal, bm.mw)
			call := caller("calc.sub", "alice", "free")
			b.ReportAllocs()
			for b.Loop() {
				clk.Add(time.Microsecond)
				if _, err := h(context.Background(), call); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
