package httprpc

import (
	"context"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/resilience"
)

// rateLimitContext returns the context the calls of one POST /rpc run under: it carries
// the caller's address (how anonymous callers are told apart by the rate-limit and
// idempotency stages) and turns each rate-limit draw into the response's RateLimit and
// RateLimit-Policy headers. The face asks for it only when either section is configured.
func rateLimitContext(st Settings, w http.ResponseWriter, r *http.Request) context.Context {
	ctx := r.Context()
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		ctx = resilience.WithClientAddr(ctx, ap.Addr())
	}
	if !st.RateLimits {
		return ctx
	}
	q := &quotaHeaders{w: w}
	return resilience.WithQuotaReport(ctx, q.report)
}

// quotaHeaders writes the RateLimit-Policy and RateLimit header fields of
// draft-ietf-httpapi-ratelimit-headers-11 (structured fields, RFC 9651): one quota policy
// item per rule the body's calls drew from,
//
//	RateLimit-Policy: "calc.*@free";q=20;w=2
//	RateLimit: "calc.*@free";r=19;t=1
//
// q is the bucket's size (the rule's burst), w the seconds an empty bucket takes to fill
// (q × the rule's interval, rounded up), r the whole tokens left after the call, and t the
// seconds until the next token (rounded up; for a refused call, its Retry-After). A batch
// whose members drew from one rule reports the draw that left the fewest tokens. No
// partition key is sent: the partition is the caller itself.
type quotaHeaders struct {
	w      http.ResponseWriter
	mu     sync.Mutex
	quotas []resilience.Quota
}

// report records q and rewrites the headers, unless the response has started.
func (h *quotaHeaders) report(q resilience.Quota) {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := slices.IndexFunc(h.quotas, func(o resilience.Quota) bool { return o.Policy == q.Policy })
	switch {
	case i < 0:
		h.quotas = append(h.quotas, q)
	case q.Remaining <= h.quotas[i].Remaining:
		h.quotas[i] = q
	default:
		return
	}
	if w, ok := h.w.(interface{ Written() bool }); ok && w.Written() {
		return
	}
	var policy, limit strings.Builder
	for k, q := range h.quotas {
		if k > 0 {
			policy.WriteByte(',')
			limit.WriteByte(',')
		}
		writeSFString(&policy, q.Policy)
		policy.WriteString(";q=" + strconv.FormatInt(q.Limit, 10) + ";w=" + strconv.FormatInt(ceilSeconds(q.Window), 10))
		writeSFString(&limit, q.Policy)
		limit.WriteString(";r=" + strconv.FormatInt(q.Remaining, 10) + ";t=" + strconv.FormatInt(ceilSeconds(q.Reset), 10))
	}
	hdr := h.w.Header()
	hdr.Set("RateLimit-Policy", policy.String())
	hdr.Set("RateLimit", limit.String())
}

// writeSFString writes s as a structured-field string (RFC 9651 §4.1.6). Rule names are
// printable ASCII; the escapes keep any other string well-formed all the same.
func writeSFString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := range len(s) {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c > 0x7e:
			b.WriteByte('?')
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}

// ceilSeconds returns d in whole seconds, rounded up, at least 1 (the draft's windows are
// positive integers of seconds).
func ceilSeconds(d time.Duration) int64 {
	return max(int64((d+time.Second-1)/time.Second), 1)
}
