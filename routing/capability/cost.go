package capability

import (
	"math"
	"sync/atomic"
	"time"
)

// costWeight is the weight of a new observation in the moving averages: about the last
// ten calls count.
const costWeight = 0.2

// costCell holds a capability's cost hint: moving averages of latency (ms) and result
// tokens, as float64 bits, NaN until the first observation. It outlives snapshots: a
// rebuilt snapshot takes over the cells of the capabilities it keeps.
type costCell struct {
	ms, tokens atomic.Uint64
}

var nanBits = math.Float64bits(math.NaN())

func newCostCell() *costCell {
	c := &costCell{}
	c.ms.Store(nanBits)
	c.tokens.Store(nanBits)
	return c
}

// observe folds one call into the averages.
func (c *costCell) observe(d time.Duration, tokens int) {
	ewma(&c.ms, float64(d)/float64(time.Millisecond))
	ewma(&c.tokens, float64(tokens))
}

// ewma moves the average in a toward x (or sets it, the first time).
func ewma(a *atomic.Uint64, x float64) {
	for {
		old := a.Load()
		avg := math.Float64frombits(old)
		next := x
		if !math.IsNaN(avg) {
			next = avg + costWeight*(x-avg)
		}
		if a.CompareAndSwap(old, math.Float64bits(next)) {
			return
		}
	}
}

// hint returns the averages rounded; zero fields when nothing was observed.
func (c *costCell) hint() Cost {
	round := func(a *atomic.Uint64) int {
		v := math.Float64frombits(a.Load())
		if math.IsNaN(v) {
			return 0
		}
		return int(math.Round(v))
	}
	return Cost{AvgMs: round(&c.ms), AvgTokens: round(&c.tokens)}
}
