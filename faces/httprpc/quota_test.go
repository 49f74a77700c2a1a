package httprpc

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/resilience"
)

// TestQuotaHeaders: one item per rule drawn from, the draw that left the fewest tokens of
// each, headers untouched once the response has started.
func TestQuotaHeaders(t *testing.T) {
	w := &writtenRecorder{ResponseRecorder: httptest.NewRecorder()}
	h := &quotaHeaders{w: w}
	q := func(policy string, remaining int64, reset time.Duration) resilience.Quota {
		return resilience.Quota{Policy: policy, Limit: 10, Window: 2500 * time.Millisecond, Remaining: remaining, Reset: reset}
	}
	steps := []struct {
		q             resilience.Quota
		written       bool
		policy, limit string
	}{
		{q("a", 5, 100*time.Millisecond), false, `"a";q=10;w=3`, `"a";r=5;t=1`},
		{q("a", 3, 1500*time.Millisecond), false, `"a";q=10;w=3`, `"a";r=3;t=2`},
		{q("a", 4, time.Second), false, `"a";q=10;w=3`, `"a";r=3;t=2`}, // more left: not reported
		{q("b@x", 0, 7*time.Second), false, `"a";q=10;w=3,"b@x";q=10;w=3`, `"a";r=3;t=2,"b@x";r=0;t=7`},
		{q("a", 0, time.Second), true, `"a";q=10;w=3,"b@x";q=10;w=3`, `"a";r=3;t=2,"b@x";r=0;t=7`}, // too late
	}
	for i, s := range steps {
		w.written = s.written
		h.report(s.q)
		if got := w.Header().Get("RateLimit-Policy"); got != s.policy {
			t.Errorf("step %d: RateLimit-Policy %q, want %q", i, got, s.policy)
		}
		if got := w.Header().Get("RateLimit"); got != s.limit {
			t.Errorf("step %d: RateLimit %q, want %q", i, got, s.limit)
		}
	}
	var b strings.Builder
	writeSFString(&b, "a\"b\\c\x01é")
	if b.String() != `"a\"b\\c???"` {
		t.Errorf("structured-field string %s", b.String())
	}
}

// writtenRecorder is a ResponseRecorder that says whether the response has started, as
// gin's writer does.
type writtenRecorder struct {
	*httptest.ResponseRecorder
	written bool
}

func (w *writtenRecorder) Written() bool { return w.written }
