package sessions

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/hardening"
	"github.com/gatehouse-dev/gatehouse/server"
)

// seedEnv is the variable hardening.Rand reads the seed from.
const seedEnv = "GATEHOUSE_FUZZ_SEED"

// seeded returns the run's random source and its seed: the one GATEHOUSE_FUZZ_SEED gives,
// or one drawn from the clock and set for hardening.Rand, so that a failure names it.
func seeded(t *testing.T) (*rand.Rand, uint64) {
	t.Helper()
	s := os.Getenv(seedEnv)
	if s == "" {
		s = strconv.FormatUint(uint64(time.Now().UnixNano()), 10)
		t.Setenv(seedEnv, s)
	}
	seed, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", seedEnv, s, err)
	}
	return hardening.Rand(t), seed
}

// fork is an independent source for one worker, drawn from the run's source in order, so
// that each worker's operations replay from the seed whatever the interleaving.
func fork(r *rand.Rand) *rand.Rand {
	return rand.New(rand.NewPCG(r.Uint64(), r.Uint64()))
}

// outcomes is the set of outcomes a model allows for one operation.
type outcomes []string

func allow(o ...string) outcomes { return o }

func (o outcomes) has(got string) bool { return slices.Contains(o, got) }

// history keeps the last operations of a run (every worker's, in the order they ended)
// for the failure message, and counts each operation's outcomes for the log.
type history struct {
	seed uint64

	mu     sync.Mutex
	ops    []string
	counts map[string]int
	failed int
}

const historyLen = 30

func newHistory(seed uint64) *history { return &history{seed: seed, counts: map[string]int{}} }

// check records what op got and fails the test when the model does not allow it.
func (h *history) check(t *testing.T, who, op, got string, allowed outcomes) bool {
	t.Helper()
	line := fmt.Sprintf("%s %s -> %s", who, op, got)
	h.mu.Lock()
	h.ops = append(h.ops, line)
	if len(h.ops) > historyLen {
		h.ops = h.ops[len(h.ops)-historyLen:]
	}
	h.counts[opName(op)+" "+got]++
	ok := allowed.has(got)
	var last string
	if !ok {
		h.failed++
		last = strings.Join(h.ops, "\n  ")
	}
	h.mu.Unlock()
	if !ok {
		t.Errorf("%s %s: outcome %q, the model allows %v (replay: %s=%d)\nlast operations:\n  %s", who, op, got, allowed, seedEnv, h.seed, last)
	}
	return ok
}

// note records an operation that has no outcome to check (a connection dropped, …).
func (h *history) note(who, op string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, who+" "+op)
	if len(h.ops) > historyLen {
		h.ops = h.ops[len(h.ops)-historyLen:]
	}
	h.counts[opName(op)]++
}

// log writes the outcome counts.
func (h *history) log(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	keys := make([]string, 0, len(h.counts))
	for k := range h.counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %-48s %d", k, h.counts[k])
	}
	t.Logf("outcomes (seed %d):%s", h.seed, b.String())
}

func opName(op string) string {
	name, _, _ := strings.Cut(op, " ")
	return name
}

// reloader re-applies yaml (and, every other time, alt: the same with changed limits) to
// g every interval until stop is closed, failing the test on an error; it returns the
// number of reloads when done is read.
func reloader(t *testing.T, g *hardening.Gateway, r *rand.Rand, yamls []string, stop <-chan struct{}) <-chan int {
	t.Helper()
	done := make(chan int, 1)
	go func() {
		n := 0
		defer func() { done <- n }()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(50+r.IntN(150)) * time.Millisecond):
			}
			yaml := yamls[r.IntN(len(yamls))]
			cfg, err := server.Parse("hardening.yaml", []byte(yaml))
			if err != nil {
				t.Errorf("reload config: %v", err)
				return
			}
			if err := g.Reload(cfg); err != nil {
				t.Errorf("reload: %v", err)
				return
			}
			n++
		}
	}()
	return done
}
