// Package gcfloor gives the garbage collector a heap floor. Go's default (GOGC=100) starts a
// collection each time the heap has grown by as much as is live; a gateway's live heap is a
// few megabytes, so under load it collects every few hundred calls, and marking is a fifth of
// its CPU. With a floor, the heap target is at least the floor (live × (1 + GOGC/100) ≥
// floor): while the live heap is small, collections are that much rarer; once the live heap
// is half the floor or more, GOGC is back at its base and nothing changes. The floor is a
// target, not a limit: memory stays bounded by the live heap (GOMEMLIMIT, when set, still
// applies).
//
// After every collection a finalizer (re-armed each cycle) reads the live heap
// (runtime/metrics /gc/heap/live:bytes) and sets GOGC for the next one.
package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// basePercent is GOGC once the live heap reaches half the floor: Go's default.
const basePercent = 100

// maxPercent bounds GOGC while the live heap is tiny (at start), so one collection is never
// put off by more than this.
const maxPercent = 10000

const liveMetric = "/gc/heap/live:bytes"

// Tuner keeps the heap target at its floor. The zero value is not usable; see Start.
type Tuner struct {
	floor   atomic.Uint64 // bytes; 0 is off
	stopped atomic.Bool
	mu      sync.Mutex // serialises tune
	percent int        // GOGC set last
	sample  []metrics.Sample
}

// sentinel is the object whose finalizer runs after each collection (it holds a pointer, so
// the tiny allocator does not batch it with others and delay its finalizer).
type sentinel struct{ _ *byte }

// Start sets a heap floor of floor bytes for this process and returns its tuner, whose Stop
// gives GOGC back. It returns nil — and changes nothing — when floor is 0 or the GOGC
// environment variable is set (an operator's explicit setting wins). One tuner per process.
func Start(floor uint64) *Tuner {
	if floor == 0 || os.Getenv("GOGC") != "" {
		return nil
	}
	t := &Tuner{percent: debug.SetGCPercent(basePercent), sample: []metrics.Sample{{Name: liveMetric}}}
	t.floor.Store(floor)
	t.tune()
	t.arm()
	return t
}

// SetFloor changes the floor (a reload); it takes effect at the next collection. 0 turns the
// floor off from then (GOGC back at its base).
func (t *Tuner) SetFloor(floor uint64) {
	if t == nil {
		return
	}
	t.floor.Store(floor)
	t.tune()
}

// Percent is the GOGC the tuner set last.
func (t *Tuner) Percent() int {
	if t == nil {
		return basePercent
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.percent
}

// Stop ends the tuning and sets GOGC back to its base.
func (t *Tuner) Stop() {
	if t == nil || t.stopped.Swap(true) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	debug.SetGCPercent(basePercent)
	t.percent = basePercent
}

func (t *Tuner) arm() {
	s := &sentinel{}
	runtime.SetFinalizer(s, func(*sentinel) {
		if t.stopped.Load() {
			return
		}
		t.tune()
		t.arm()
	})
}

// tune sets GOGC so that the next heap target is at least the floor.
func (t *Tuner) tune() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped.Load() {
		return
	}
	metrics.Read(t.sample)
	var live uint64
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live = t.sample[0].Value.Uint64()
	}
	p := Percent(t.floor.Load(), live)
	if p != t.percent {
		debug.SetGCPercent(p)
		t.percent = p
	}
}

// Percent is the GOGC that makes the heap target (live × (1 + GOGC/100)) at least floor,
// never below Go's default nor above maxPercent.
func Percent(floor, live uint64) int {
	if floor == 0 {
		return basePercent
	}
	if live == 0 {
		return maxPercent
	}
	need := floor*100/live - 100
	if floor*100/live < 100 || need <= basePercent {
		return basePercent
	}
	return int(min(need, maxPercent))
}
