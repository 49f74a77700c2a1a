package resilience_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/state"
)

// clock is a settable clock for the rate-limit and idempotency tests.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(t0.UnixNano())
	return c
}

func (c *clock) Now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) Add(d time.Duration) { c.ns.Add(int64(d)) }

// newKV returns an embedded store on clk, closed when the test ends.
func newKV(t testing.TB, clk *clock) *state.Embedded {
	t.Helper()
	kv := state.NewEmbedded(state.EmbeddedOptions{Now: clk.Now})
	t.Cleanup(func() { _ = kv.Close() })
	return kv
}

// failingKV is a state store whose every operation fails.
type failingKV struct{ state.KV }

var errStoreDown = errors.New("store down")

func (failingKV) Get(context.Context, string) ([]byte, bool, error) { return nil, false, errStoreDown }
func (failingKV) SetNX(context.Context, string, []byte, time.Duration) (bool, error) {
	return false, errStoreDown
}

func (failingKV) CompareAndSwap(context.Context, string, []byte, []byte, time.Duration) (bool, error) {
	return false, errStoreDown
}

// counter is a terminal handler that counts its calls and answers "ok".
type counter struct{ n atomic.Int32 }

func (c *counter) handle(context.Context, *gateway.Call) (*gateway.Result, error) {
	c.n.Add(1)
	return gateway.NewResult([]byte(`"ok"`)), nil
}

// caller returns a call of method by an authenticated subject of tier.
func caller(method, subject, tier string) *gateway.Call {
	return &gateway.Call{Method: method, Principal: gateway.Principal{Subject: subject, Tier: tier}}
}

// anonymous returns a call of method by an anonymous caller.
func anonymous(method string) *gateway.Call {
	return &gateway.Call{Method: method, Principal: gateway.Principal{Subject: "anonymous", Anonymous: true, Tier: "standard"}}
}
