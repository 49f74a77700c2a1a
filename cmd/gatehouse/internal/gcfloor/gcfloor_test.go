package gcfloor

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name        string
		floor, live uint64
		want        int
	}{
		{"off", 0, 5 * mib, basePercent},
		{"nothing live yet", 64 * mib, 0, maxPercent},
		{"tiny live heap: capped", 64 * mib, 1024, maxPercent},
		{"1 MiB live under a 64 MiB floor", 64 * mib, 1 * mib, 6300},
		{"30 MiB live", 64 * mib, 30 * mib, 113},
		{"half the floor live: the base", 64 * mib, 32 * mib, basePercent},
		{"more than half live", 64 * mib, 40 * mib, basePercent},
		{"more live than the floor", 64 * mib, 100 * mib, basePercent},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Percent(c.floor, c.live); got != c.want {
				t.Fatalf("Percent(%d, %d) = %d, want %d", c.floor, c.live, got, c.want)
			}
		})
	}
}

// gcPercent reads GOGC as the runtime has it.
func gcPercent() int {
	p := debug.SetGCPercent(basePercent)
	debug.SetGCPercent(p)
	return p
}

// waitPercent collects until the tuner's finalizer has set a GOGC that ok accepts.
func waitPercent(t *testing.T, tu *Tuner, ok func(int) bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(tu.Percent()) || gcPercent() != tu.Percent() {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC %d (tuner %d), want %s", gcPercent(), tu.Percent(), what)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

var keep []byte

func TestTunerFollowsTheLiveHeap(t *testing.T) {
	t.Setenv("GOGC", "")
	const floor = 64 << 20
	tu := Start(floor)
	if tu == nil {
		t.Fatal("Start returned nil without GOGC set")
	}
	waitPercent(t, tu, func(p int) bool { return p > basePercent }, "above the base while the live heap is small")

	// A live heap of more than half the floor: the base after the next collection.
	keep = make([]byte, floor/2+(8<<20))
	for i := range keep {
		keep[i] = byte(i)
	}
	waitPercent(t, tu, func(p int) bool { return p == basePercent }, "the base with half the floor live")

	keep = nil
	waitPercent(t, tu, func(p int) bool { return p > basePercent }, "above the base again once the heap is freed")

	tu.SetFloor(0)
	if p := gcPercent(); p != basePercent {
		t.Fatalf("GOGC %d after the floor was turned off, want %d", p, basePercent)
	}
	tu.SetFloor(floor)
	tu.Stop()
	if p := gcPercent(); p != basePercent {
		t.Fatalf("GOGC %d after Stop, want %d", p, basePercent)
	}
	runtime.GC() // a finalizer after Stop changes nothing
	runtime.GC()
	if p := gcPercent(); p != basePercent {
		t.Fatalf("GOGC %d after Stop and two collections, want %d", p, basePercent)
	}
}

func TestStartLeavesAnExplicitGOGC(t *testing.T) {
	t.Setenv("GOGC", "200")
	if tu := Start(64 << 20); tu != nil {
		tu.Stop()
		t.Fatal("Start tuned with GOGC set")
	}
	if tu := Start(0); tu != nil {
		t.Fatal("Start tuned with no floor")
	}
	var nilTuner *Tuner
	nilTuner.SetFloor(1)
	nilTuner.Stop()
	if p := nilTuner.Percent(); p != basePercent {
		t.Fatalf("nil tuner's Percent %d", p)
	}
}
