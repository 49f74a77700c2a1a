package agentlink

import (
	"context"
	"fmt"
	"sync"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// MaxRedundancy bounds the agents one redundant task may run on.
const MaxRedundancy = 16

// Run is one run of a redundant task: its outcome, or its error, on one agent.
type Run struct {
	// Agent is the agent the run was dispatched to.
	Agent string
	// Outcome is the run's result; nil when it failed.
	Outcome *Outcome
	// Err is why the run failed (a *gateway.Error); nil when it succeeded.
	Err error
}

// DispatchRedundant runs t on k distinct agents at once and returns every run, in the
// order the agents were chosen, so that the caller can cross-check them: the gateway never
// merges or votes. The runs share t's job (one is made when t names none) and each has its
// own task id. It fails as a whole only before anything is dispatched: INVALID_PARAMS for
// a bad input or k out of 1…MaxRedundancy, NO_AGENT when fewer than k agents offer the
// operator (data: offered, wanted), OVERLOADED when fewer than k of them have room. A run's
// own failure (rejected, failed, timed out, agent gone) is reported in its Run.
func (h *Hub) DispatchRedundant(ctx context.Context, t Task, k int) ([]Run, error) {
	if k < 1 || k > MaxRedundancy {
		return nil, gateway.NewError(schemas.CodeInvalidParams).With("field", ParamRedundancy).
			With("reason", fmt.Sprintf("must be an integer from 1 to %d", MaxRedundancy))
	}
	agents, offered, spec := h.pickDistinct(t.Operator, k)
	switch {
	case spec == nil:
		return nil, errNoAgent(t.Operator)
	case offered < k:
		return nil, errNoAgent(t.Operator).With("offered", offered).With("wanted", k)
	case agents == nil:
		return nil, errBusy(t.Operator, h.cfg.HeartbeatInterval.Milliseconds())
	}
	in := t.Input
	if len(in) == 0 {
		in = []byte(`{}`)
	}
	if err := spec.inSchema.Check(in, maxInputErrors); err != nil {
		for _, a := range agents {
			a.release()
		}
		return nil, errInvalidInput(t.Operator, err)
	}
	if t.JobID == "" {
		t.JobID = newJobID()
	}
	runs := make([]Run, k)
	var wg sync.WaitGroup
	for i, a := range agents {
		runs[i].Agent = a.id
		wg.Go(func() {
			defer a.release()
			runs[i].Outcome, runs[i].Err = h.runTask(ctx, a, spec, t, in)
		})
	}
	wg.Wait()
	return runs, nil
}

// pickDistinct reserves a slot on k distinct agents offering op (least outstanding first),
// all or none. It returns how many agents offer op, and the operator's spec (nil when none
// does); nil agents with offered ≥ k means too few have room.
func (h *Hub) pickDistinct(op string, k int) (agents []*agent, offered int, spec *operatorSpec) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	o := h.ops[op]
	if o == nil {
		return nil, 0, nil
	}
	if len(o.agents) < k {
		return nil, len(o.agents), o.spec
	}
	for _, a := range leastLoaded(o.agents) {
		if len(agents) == k {
			break
		}
		if a.reserve() {
			agents = append(agents, a)
		}
	}
	if len(agents) < k {
		for _, a := range agents {
			a.release()
		}
		return nil, len(o.agents), o.spec
	}
	return agents, len(o.agents), o.spec
}
