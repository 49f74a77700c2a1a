package resilience

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
)

// RateLimitConfig is the rate_limits section: token buckets per caller, per method pattern
// and per client tier. Absent, the stage is not in the chain.
//
// For each call the most specific rule that applies to the caller's tier is chosen (see
// rateRules.match) and the call takes one token from the caller's bucket of that rule; a
// call no rule matches is not limited. An empty token bucket refuses the call with
// RATE_LIMITED (5001) and error.data.retry_after_ms.
type RateLimitConfig struct {
	// Rules are the rate limits, in any order: the most specific match wins, not the first.
	Rules []RateLimitRule `yaml:"rules" json:"rules,omitempty"`
	// OnStoreError says what happens to a call when the state store cannot be read or
	// written: "allow" (the default: the call runs unlimited, and the failure is logged) or
	// "deny" (the call is refused with UNAVAILABLE and a retry_after_ms).
	OnStoreError string `yaml:"on_store_error" json:"on_store_error,omitempty"`
}

// RateLimitRule is one rate limit: callers of Tier (every tier when empty) calling a method
// that Match matches may make Rate calls, Burst at once, each caller on its own bucket.
type RateLimitRule struct {
	// Name names the rule's buckets in the state store and its quota policy in the
	// RateLimit headers. Default: Match, or Match@Tier for a rule with a tier. Letters,
	// digits and _ . * ? @ : - only, at most 128 characters; unique among the rules.
	Name string `yaml:"name" json:"name,omitempty"`
	// Match is a method pattern: "*" any run of characters (dots included), "?" one
	// character, anything else itself — the policy's method pattern language. Default "*".
	Match string `yaml:"match" json:"match,omitempty"`
	// Tier restricts the rule to callers of that client tier (Principal.Tier).
	Tier string `yaml:"tier" json:"tier,omitempty"`
	// Rate is COUNT/PERIOD: "10/s", "600/m", "1000/h", "5/250ms", "100/10s".
	Rate string `yaml:"rate" json:"rate"`
	// Burst is how many calls may go at once after an idle spell: the bucket's size.
	// Default: the rate's COUNT.
	Burst int64 `yaml:"burst" json:"burst,omitempty"`
}

// Values of RateLimitConfig.OnStoreError.
const (
	StoreErrorAllow = "allow"
	StoreErrorDeny  = "deny"
)

// Bounds of a rate-limit rule.
const (
	// MaxRateCount bounds a rate's COUNT and a burst.
	MaxRateCount = 1_000_000_000
	// MaxRatePeriod bounds a rate's PERIOD.
	MaxRatePeriod = 24 * time.Hour
	// MaxBucketSpan bounds Burst × (PERIOD / COUNT): the time an empty bucket takes to
	// fill, which is also how long its state is kept.
	MaxBucketSpan = 30 * 24 * time.Hour
	// storeErrorRetry is the retry_after_ms of a call refused because the store failed.
	storeErrorRetry = time.Second
	// storeErrorLogEvery bounds how often a failing store is logged.
	storeErrorLogEvery = 10 * time.Second
)

// ratePattern is COUNT/PERIOD; PERIOD is a Go duration or a bare unit (1 of it).
var ratePattern = regexp.MustCompile(`^([1-9][0-9]{0,9})/((?:[0-9]+(?:\.[0-9]+)?(?:ns|us|µs|ms|s|m|h))+|ns|us|µs|ms|s|m|h)$`)

// ruleName is what a rule name may be: characters that need no escaping in a structured
// field string (RFC 9651) and no "/", which separates the name in state keys.
var ruleName = regexp.MustCompile(`^[A-Za-z0-9_.*?@:-]{1,128}$`)

// parseRate parses COUNT/PERIOD.
func parseRate(s string) (count int64, period time.Duration, err error) {
	m := ratePattern.FindStringSubmatch(s)
	if m == nil {
		return 0, 0, fmt.Errorf("rate %q is not COUNT/PERIOD (such as 10/s, 600/m or 5/250ms)", s)
	}
	count, _ = strconv.ParseInt(m[1], 10, 64)
	unit := m[2]
	if unit[0] < '0' || unit[0] > '9' {
		unit = "1" + unit
	}
	period, err = time.ParseDuration(unit)
	switch {
	case err != nil:
		return 0, 0, fmt.Errorf("rate %q: %w", s, err)
	case count > MaxRateCount:
		return 0, 0, fmt.Errorf("rate %q: COUNT must be at most %d", s, MaxRateCount)
	case period <= 0 || period > MaxRatePeriod:
		return 0, 0, fmt.Errorf("rate %q: PERIOD must be positive and at most %s", s, MaxRatePeriod)
	case period < time.Duration(count):
		return 0, 0, fmt.Errorf("rate %q: more than one call per nanosecond", s)
	}
	return count, period, nil
}

// rateRule is a compiled RateLimitRule.
type rateRule struct {
	name   string
	tier   string
	glob   gateway.Glob
	bucket Bucket
	index  int
	// prefix is the state key prefix of the rule's buckets.
	prefix string
}

// rateRules are the compiled rules of a configuration, most specific first.
type rateRules struct {
	exact map[string][]*rateRule // method → rules with that exact pattern, tiered first
	globs []*rateRule            // wildcard rules, most specific first
}

// Validate reports every problem of the section; paths are relative to it.
func (c RateLimitConfig) Validate() []ConfigError {
	_, errs := c.compile()
	return errs
}

// compile checks the section and builds its rules.
func (c RateLimitConfig) compile() (*rateRules, []ConfigError) {
	var errs []ConfigError
	bad := func(path, format string, args ...any) {
		errs = append(errs, ConfigError{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	switch c.OnStoreError {
	case "", StoreErrorAllow, StoreErrorDeny:
	default:
		bad("on_store_error", "%q is not %q or %q", c.OnStoreError, StoreErrorAllow, StoreErrorDeny)
	}
	rs := &rateRules{exact: make(map[string][]*rateRule)}
	names := make(map[string]int, len(c.Rules))
	seen := make(map[[2]string]int, len(c.Rules))
	for i, rc := range c.Rules {
		path := fmt.Sprintf("rules[%d]", i)
		r, err := compileRateRule(i, rc)
		if err != nil {
			bad(path+"."+err.Path, "%s", err.Msg)
			continue
		}
		if j, dup := seen[[2]string{r.glob.Pattern(), r.tier}]; dup {
			bad(path+".match", "rules[%d] already has match %q and tier %q", j, r.glob.Pattern(), r.tier)
			continue
		}
		if j, dup := names[r.name]; dup {
			bad(path+".name", "name %q is also the name of rules[%d]; set name on one of them", r.name, j)
			continue
		}
		names[r.name], seen[[2]string{r.glob.Pattern(), r.tier}] = i, i
		if r.glob.Exact() {
			rs.exact[r.glob.Pattern()] = append(rs.exact[r.glob.Pattern()], r)
		} else {
			rs.globs = append(rs.globs, r)
		}
	}
	for _, rules := range rs.exact {
		slices.SortStableFunc(rules, compareSpecificity)
	}
	slices.SortStableFunc(rs.globs, compareSpecificity)
	return rs, errs
}

// compileRateRule compiles rule i; a problem comes back with its path inside the rule.
func compileRateRule(i int, rc RateLimitRule) (*rateRule, *ConfigError) {
	if rc.Match == "" {
		rc.Match = "*"
	}
	count, period, err := parseRate(rc.Rate)
	if err != nil {
		return nil, &ConfigError{Path: "rate", Msg: err.Error()}
	}
	if rc.Burst == 0 {
		rc.Burst = count
	}
	interval := period / time.Duration(count)
	switch {
	case rc.Burst < 0 || rc.Burst > MaxRateCount:
		return nil, &ConfigError{Path: "burst", Msg: fmt.Sprintf("burst is %d: it must be between 1 and %d", rc.Burst, MaxRateCount)}
	case rc.Burst > int64(MaxBucketSpan/interval):
		return nil, &ConfigError{Path: "burst", Msg: fmt.Sprintf("burst %d at %s fills in more than %s", rc.Burst, rc.Rate, MaxBucketSpan)}
	}
	name := rc.Name
	if name == "" {
		name = rc.Match
		if rc.Tier != "" {
			name += "@" + rc.Tier
		}
	}
	if !ruleName.MatchString(name) {
		path := "name"
		if rc.Name == "" {
			path = "match"
		}
		return nil, &ConfigError{Path: path, Msg: fmt.Sprintf("rule name %q must be 1 to 128 of A-Z a-z 0-9 _ . * ? @ : - (set name)", name)}
	}
	return &rateRule{
		name: name, tier: rc.Tier, glob: gateway.NewGlob(rc.Match), index: i,
		bucket: Bucket{Interval: interval, Burst: rc.Burst},
		prefix: rateKeyPrefix + name + "/",
	}, nil
}

// compareSpecificity orders rules most specific first: an exact pattern before any
// wildcard one; then more literal characters; then a rule for one tier before a rule for
// every tier; then the rule written first.
func compareSpecificity(a, b *rateRule) int {
	switch {
	case a.glob.Exact() != b.glob.Exact():
		if a.glob.Exact() {
			return -1
		}
		return 1
	case a.glob.Literal() != b.glob.Literal():
		return b.glob.Literal() - a.glob.Literal()
	case (a.tier == "") != (b.tier == ""):
		if a.tier != "" {
			return -1
		}
		return 1
	default:
		return a.index - b.index
	}
}

// match returns the rule for a call of method by a caller of tier, nil when none applies:
// the most specific (compareSpecificity) of the rules whose pattern matches method and
// whose tier is the caller's or empty. So a method's own rule applies to every tier unless
// a rule for the same pattern names the caller's tier.
func (rs *rateRules) match(method, tier string) *rateRule {
	for _, r := range rs.exact[method] {
		if r.tier == "" || r.tier == tier {
			return r
		}
	}
	for _, r := range rs.globs {
		if (r.tier == "" || r.tier == tier) && r.glob.Match(method) {
			return r
		}
	}
	return nil
}

// rateKeyPrefix starts the state key of every bucket: rateKeyPrefix + rule name + "/" +
// identityKey(caller).
const rateKeyPrefix = "ratelimit/"

// Quota is what the rate-limit stage reports about the bucket a call drew from, for faces
// that tell the caller (the HTTP face's RateLimit and RateLimit-Policy headers).
type Quota struct {
	// Policy is the rule's name.
	Policy string
	// Limit is the bucket's size (the rule's burst).
	Limit int64
	// Window is how long an empty bucket takes to fill: Limit × the rule's interval.
	Window time.Duration
	// Remaining, Reset and RetryAfter are the Draw's.
	Remaining  int64
	Reset      time.Duration
	RetryAfter time.Duration
}

type quotaReportKey struct{}

// WithQuotaReport returns ctx whose calls report each rate-limit draw to report, from the
// goroutine running the call (batch members run concurrently: report must be safe for
// concurrent use).
func WithQuotaReport(ctx context.Context, report func(Quota)) context.Context {
	return context.WithValue(ctx, quotaReportKey{}, report)
}

// NewRateLimitStage returns the rate-limit stage of cfg, its buckets kept in kv (the
// process's state store, so they outlive a reload and are shared by replicas sharing it):
// nil, out of the chain, when cfg is nil. A section that does not compile refuses every
// call rather than serve unlimited. now is the clock; log receives store failures.
func NewRateLimitStage(cfg *RateLimitConfig, kv state.KV, now func() time.Time, log *slog.Logger) gateway.Middleware {
	if cfg == nil {
		return nil
	}
	l, err := NewRateLimiter(*cfg, NewKVBuckets(kv), now, log)
	if err != nil {
		return refuseAll("the rate_limits section does not compile", err)
	}
	return l.Middleware()
}

// RateLimiter is the rate-limit stage of one configuration.
type RateLimiter struct {
	rules   *rateRules
	buckets Buckets
	deny    bool
	now     func() time.Time
	log     *slog.Logger
	lastLog atomic.Int64 // Unix nanoseconds of the last store failure logged
}

// NewRateLimiter compiles cfg into a stage keeping its buckets in buckets; now is the clock
// and log receives store failures (at most one line per 10s).
func NewRateLimiter(cfg RateLimitConfig, buckets Buckets, now func() time.Time, log *slog.Logger) (*RateLimiter, error) {
	rules, errs := cfg.compile()
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return nil, fmt.Errorf("rate_limits: %s", strings.Join(msgs, "; "))
	}
	return &RateLimiter{rules: rules, buckets: buckets, deny: cfg.OnStoreError == StoreErrorDeny, now: now, log: log}, nil
}

// Middleware returns the stage: it takes a token for each call a rule matches, before the
// call is routed, and refuses the call with RATE_LIMITED (5001) when the bucket is empty.
func (l *RateLimiter) Middleware() gateway.Middleware {
	return func(next gateway.Handler) gateway.Handler {
		return func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
			if err := l.admit(ctx, call); err != nil {
				return nil, err
			}
			return next(ctx, call)
		}
	}
}

// admit takes a token for call from the caller's bucket of its rule and reports the draw;
// a non-nil error refuses the call.
func (l *RateLimiter) admit(ctx context.Context, call *gateway.Call) error {
	r := l.rules.match(call.Method, call.Principal.Tier)
	if r == nil {
		return nil
	}
	var buf [384]byte
	key := string(appendIdentityKey(append(buf[:0], r.prefix...), ctx, call.Principal))
	d, err := l.buckets.Take(ctx, key, r.bucket, l.now())
	if err != nil {
		return l.storeFailed(ctx, r, err)
	}
	if report, ok := ctx.Value(quotaReportKey{}).(func(Quota)); ok {
		report(Quota{Policy: r.name, Limit: r.bucket.Burst, Window: r.bucket.Interval * time.Duration(r.bucket.Burst),
			Remaining: d.Remaining, Reset: d.Reset, RetryAfter: d.RetryAfter})
	}
	if !d.Allowed {
		return gateway.NewError(schemas.CodeRateLimited).
			With("retry_after_ms", ceilMillis(d.RetryAfter)).With("policy", r.name).With("recovery_hint", "RETRY_AFTER")
	}
	return nil
}

// storeFailed answers a call whose draw failed in the store: the caller's own context
// error when that is why; else the failure is logged (at most once per 10s) and the call
// is refused with UNAVAILABLE under on_store_error deny, let through (nil) under allow.
func (l *RateLimiter) storeFailed(ctx context.Context, r *rateRule, cause error) error {
	if ctx.Err() != nil {
		return gateway.AsError(ctx.Err())
	}
	now := l.now().UnixNano()
	if last := l.lastLog.Load(); now-last >= int64(storeErrorLogEvery) && l.lastLog.CompareAndSwap(last, now) {
		mode := StoreErrorAllow
		if l.deny {
			mode = StoreErrorDeny
		}
		l.log.Warn("rate limit state store failed", "rule", r.name, "on_store_error", mode, "err", cause)
	}
	if !l.deny {
		return nil
	}
	return gateway.Errorf(schemas.CodeUnavailable, "Rate limit state unavailable").
		With("retry_after_ms", storeErrorRetry.Milliseconds()).Wrap(cause)
}

// ceilMillis returns d in whole milliseconds, rounded up, at least 1.
func ceilMillis(d time.Duration) int64 {
	return max(int64((d+time.Millisecond-1)/time.Millisecond), 1)
}
