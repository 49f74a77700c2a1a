package resilience

import (
	"sync"
	"time"
)

// retryBudget counts, for one backend, the calls sent to it and the retries taken over a
// sliding window of retryBudgetBucketsCount steps. It lives in the process, like the
// breakers: each replica budgets the load it adds itself.
type retryBudget struct {
	ratio float64
	floor int
	step  time.Duration

	mu    sync.Mutex
	slots [retryBudgetBucketsCount]retrySlot
}

// retrySlot holds the counts of one step of the window.
type retrySlot struct {
	step    int64 // which step of time (Unix nanoseconds ÷ step) the counts are of
	calls   int
	retries int
}

func newRetryBudget(c RetryBudgetConfig) *retryBudget {
	return &retryBudget{ratio: c.Ratio, floor: c.MinRetries, step: max(c.Window/retryBudgetBucketsCount, 1)}
}

// sent counts a call sent to the backend at now (its first attempt).
func (b *retryBudget) sent(now time.Time) {
	b.mu.Lock()
	b.slot(now).calls++
	b.mu.Unlock()
}

// take reports whether a retry at now fits the budget, and counts it when it does: the
// window's retries so far must be fewer than Ratio of its calls (rounded down) or than
// MinRetries, whichever is more.
func (b *retryBudget) take(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	calls, retries := b.window(now)
	if retries >= max(b.floor, int(b.ratio*float64(calls))) {
		return false
	}
	b.slot(now).retries++
	return true
}

// window returns the calls and retries counted in the steps of the window ending at now.
func (b *retryBudget) window(now time.Time) (calls, retries int) {
	cur := now.UnixNano() / int64(b.step)
	for _, s := range b.slots {
		if age := cur - s.step; age >= 0 && age < retryBudgetBucketsCount {
			calls += s.calls
			retries += s.retries
		}
	}
	return calls, retries
}

// slot returns the slot of now's step, cleared when it last held an older step.
func (b *retryBudget) slot(now time.Time) *retrySlot {
	cur := now.UnixNano() / int64(b.step)
	s := &b.slots[uint64(cur)%retryBudgetBucketsCount] //nolint:gosec // Unix time after 1970 is positive
	if s.step != cur {
		*s = retrySlot{step: cur}
	}
	return s
}
