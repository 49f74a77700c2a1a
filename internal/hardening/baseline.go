package hardening

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

// Baseline is what a run must give back: the process's goroutines and open file
// descriptors, and the keys of a state store.
type Baseline struct {
	Goroutines int
	FDs        int // -1 where /proc/self/fd cannot be read
	Keys       int // -1 without a store
	keys       func() int
}

// Take records the baseline now; keys counts the state store's live keys (nil: none).
// Take it after the gateway is up and warm (a first call made), so that pools and
// long-lived workers are part of it.
func Take(keys func() int) Baseline {
	settle()
	b := Baseline{Goroutines: runtime.NumGoroutine(), FDs: openFDs(), Keys: -1, keys: keys}
	if keys != nil {
		b.Keys = keys()
	}
	return b
}

// Slack is how far above the baseline a count may stay once a run is over: pooled
// connections a run opened and their reader goroutines are kept for reuse, not leaked.
type Slack struct {
	Goroutines, FDs, Keys int
}

// Check waits up to within for the counts to come back to the baseline plus slack, and
// fails the test with the difference (and a goroutine dump) if they do not.
func (b Baseline) Check(t testing.TB, within time.Duration, slack Slack) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		g, f, k := runtime.NumGoroutine(), openFDs(), -1
		if b.keys != nil {
			k = b.keys()
		}
		over := g > b.Goroutines+slack.Goroutines || (b.FDs >= 0 && f > b.FDs+slack.FDs) || (b.Keys >= 0 && k > b.Keys+slack.Keys)
		if !over {
			return
		}
		if time.Now().After(deadline) {
			var dump strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&dump, 1)
			t.Fatalf("not back to baseline after %v: goroutines %d (baseline %d + %d), open files %d (%d + %d), state keys %d (%d + %d)\n%s",
				within, g, b.Goroutines, slack.Goroutines, f, b.FDs, slack.FDs, k, b.Keys, slack.Keys, dump.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// String is the baseline for a log line.
func (b Baseline) String() string {
	return fmt.Sprintf("goroutines %d, open files %d, state keys %d", b.Goroutines, b.FDs, b.Keys)
}

func settle() {
	for range 3 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

func openFDs() int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(entries)
}
