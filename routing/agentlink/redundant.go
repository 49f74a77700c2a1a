package agentlink

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
	gatehousev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/gatehouse/v1"
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
//
// With peers (UsePeers) the agents of other replicas count too: this replica's own agents
// run as many runs as they can (up to k, all reserved or none), and the rest are forwarded
// to the other replicas in address order, each asked for as many runs as the shared
// catalog says it has agents for the operator (up to what is left). Fewer than k agents on
// every replica together is NO_AGENT (data: offered, wanted). The runs of a replica whose
// forward fails as a whole (its agents left, or are busy) are each that failure, with
// data.replica and no agent.
func (h *Hub) DispatchRedundant(ctx context.Context, t Task, k int) ([]Run, error) {
	return h.dispatchRedundant(ctx, t, k, true)
}

// share is the runs of a redundant task forwarded to one replica.
type share struct {
	addr   string
	secret []byte
	runs   int
}

// dispatchRedundant is DispatchRedundant; the agents of other replicas count when remote
// is set and the hub has peers.
func (h *Hub) dispatchRedundant(ctx context.Context, t Task, k int, remote bool) ([]Run, error) {
	if k < 1 || k > MaxRedundancy {
		return nil, gateway.NewError(schemas.CodeInvalidParams).With("field", ParamRedundancy).
			With("reason", fmt.Sprintf("must be an integer from 1 to %d", MaxRedundancy))
	}
	var pr *peering
	if remote {
		pr = h.peering()
	}
	var shares []share
	remoteOffered := 0
	if pr != nil {
		shares, remoteOffered = h.remoteShares(ctx, pr, t.Operator)
	}
	localWant := k
	if remoteOffered > 0 {
		localWant = min(k, h.localOffered(t.Operator))
	}
	agents, offered, spec := h.pickDistinct(t.Operator, localWant)
	switch {
	case spec == nil && remoteOffered == 0:
		return nil, errNoAgent(t.Operator)
	case offered+remoteOffered < k:
		return nil, errNoAgent(t.Operator).With("offered", offered+remoteOffered).With("wanted", k)
	case agents == nil && localWant > 0:
		return nil, errBusy(t.Operator, h.cfg.HeartbeatInterval.Milliseconds())
	}
	in := t.Input
	if len(in) == 0 {
		in = []byte(`{}`)
	}
	if spec != nil {
		if err := spec.inSchema.Check(in, maxInputErrors); err != nil {
			for _, a := range agents {
				a.release()
			}
			return nil, errInvalidInput(t.Operator, err)
		}
	}
	if t.JobID == "" {
		t.JobID = newJobID()
	}
	runs := make([]Run, len(agents), k)
	var wg sync.WaitGroup
	for i, a := range agents {
		runs[i].Agent = a.id
		wg.Go(func() {
			defer a.release()
			runs[i].Outcome, runs[i].Err = h.runTask(ctx, a, spec, t, in)
		})
	}
	// The shares of the other replicas, planned before any is sent.
	left := k - len(agents)
	plan := make([]int, 0, len(shares))
	for _, sh := range shares {
		if left == 0 {
			break
		}
		n := min(sh.runs, left)
		left -= n
		plan = append(plan, n)
	}
	parts := make([][]Run, len(plan))
	whole := make([]error, len(plan)) // a forward's failure as a whole, by share
	for i, n := range plan {
		wg.Go(func() {
			parts[i], whole[i] = h.forwardRuns(ctx, pr, shares[i], t, in, n)
		})
	}
	wg.Wait()
	for i, part := range parts {
		if spec == nil && whole[i] != nil && gateway.AsError(whole[i]).Code() == schemas.CodeInvalidParams {
			return nil, whole[i] // the input is the same for every run: refused as a whole
		}
		runs = append(runs, part...)
	}
	return runs, nil
}

// forwardRuns runs n runs of t on the agents of the replica sh; a failure of the whole
// forward becomes each run's failure, and is returned too.
func (h *Hub) forwardRuns(ctx context.Context, pr *peering, sh share, t Task, in json.RawMessage, n int) ([]Run, error) {
	var err error
	if n == 1 { // the plain answer: one run
		var res *gatehousev1.DispatchTaskResponse
		if res, err = h.forwardTo(ctx, pr, sh.addr, sh.secret, t, in, 1); err == nil {
			if f := res.GetFailure(); f != nil {
				return []Run{{Agent: agentOf(failureError(f)), Err: failureError(f)}}, nil
			}
			var o Outcome
			if jerr := json.Unmarshal(res.GetOutcomeJson(), &o); jerr != nil {
				return []Run{{Err: gateway.NewError(schemas.CodeInternal).With("operator", t.Operator).Wrap(jerr)}}, nil
			}
			return []Run{{Agent: o.Agent, Outcome: &o}}, nil
		}
	} else {
		var res *gatehousev1.DispatchTaskResponse
		if res, err = h.forwardTo(ctx, pr, sh.addr, sh.secret, t, in, n); err == nil {
			if f := res.GetFailure(); f != nil {
				err = failureError(f)
			} else if runs := runsOf(res, t.Operator); len(runs) == n {
				return runs, nil
			} else {
				err = gateway.NewError(schemas.CodeInternal).With("operator", t.Operator).
					With("reason", fmt.Sprintf("the replica answered %d runs for %d", len(runs), n))
			}
		}
	}
	e := gateway.AsError(err).With("replica", sh.addr)
	runs := make([]Run, n)
	for i := range runs {
		runs[i].Err = e
	}
	return runs, e
}

// agentOf is the agent a failure names, if any.
func agentOf(err error) string {
	a, _ := gateway.AsError(err).Data()["agent"].(string)
	return a
}

// remoteShares returns the replicas other than this one whose agents offer op, with how
// many do (the shared catalog) and their forwarding secrets (the routing entries), in
// address order, and the number of those agents.
func (h *Hub) remoteShares(ctx context.Context, pr *peering, op string) ([]share, int) {
	h.mu.RLock()
	var counts map[string]int
	if r := h.remote.ops[op]; r != nil {
		counts = maps.Clone(r.replicas)
	}
	h.mu.RUnlock()
	if len(counts) == 0 {
		return nil, 0
	}
	addrs, entries, err := h.remoteReplicas(ctx, pr, op)
	if err != nil {
		h.log.Warn("the agents registry in the shared store could not be read", "operator", op, "err", err)
		return nil, 0
	}
	var out []share
	total := 0
	for _, addr := range addrs {
		if n := counts[addr]; n > 0 {
			out = append(out, share{addr: addr, secret: entries[addr].Secret, runs: n})
			total += n
		}
	}
	return out, total
}

// localOffered counts this replica's agents offering op.
func (h *Hub) localOffered(op string) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if o := h.ops[op]; o != nil {
		return len(o.agents)
	}
	return 0
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
