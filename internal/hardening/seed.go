package hardening

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// Rand is the run's random source, seeded from GATEHOUSE_FUZZ_SEED when set (to replay a
// failure) and from the clock otherwise; the seed is logged so that any failure can be
// replayed with the same sequence.
func Rand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("GATEHOUSE_FUZZ_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("GATEHOUSE_FUZZ_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (replay: GATEHOUSE_FUZZ_SEED=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) //nolint:gosec // reproducible test inputs, not secrets
}

// Iterations is how many operations or calls a run makes: GATEHOUSE_FUZZ_ITER when set
// (long runs: make fuzz-long), else def, a tenth of it (at least 1) under -short.
func Iterations(t testing.TB, def int) int {
	t.Helper()
	if s := os.Getenv("GATEHOUSE_FUZZ_ITER"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("GATEHOUSE_FUZZ_ITER=%q: want a positive integer", s)
		}
		return n
	}
	if testing.Short() {
		return max(1, def/10)
	}
	return def
}
