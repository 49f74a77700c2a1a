package server

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// probe is a test target that records the order calls start and end in, how many ran at
// once, and optionally takes a while (respecting the context).
type probe struct {
	delay      time.Duration
	result     []byte
	running    atomic.Int32
	maxRunning atomic.Int32
	started    chan string // receives each call's id when it starts, if not nil

	mu     sync.Mutex
	events []string
}

func (p *probe) Name() string { return "probe" }

func (p *probe) Invoke(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
	n := p.running.Add(1)
	defer p.running.Add(-1)
	for {
		m := p.maxRunning.Load()
		if n <= m || p.maxRunning.CompareAndSwap(m, n) {
			break
		}
	}
	p.record("start " + call.ID.Raw())
	if p.started != nil {
		p.started <- call.ID.Raw()
	}
	if p.delay > 0 {
		select {
		case <-time.After(p.delay):
		case <-ctx.Done():
			p.record("cancel " + call.ID.Raw())
			return nil, gateway.AsError(ctx.Err())
		}
	}
	p.record("end " + call.ID.Raw())
	if p.result != nil {
		return gateway.NewResult(p.result), nil
	}
	return gateway.NewResult([]byte(`"ok"`)), nil
}

func (p *probe) record(ev string) {
	p.mu.Lock()
	p.events = append(p.events, ev)
	p.mu.Unlock()
}

func (p *probe) log() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.events...)
}

type probes map[string]*probe

func (ps probes) asTargets() map[string]gateway.Target {
	out := make(map[string]gateway.Target, len(ps))
	for m, p := range ps {
		out[m] = p
	}
	return out
}
