package faces

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// batchPlan is the dependency graph of one batch: deps[i] lists the members member i waits
// for; err[i] is set for members that cannot run (bad decode, unknown or ambiguous id,
// cycle). deps is nil when no member names depends_on.
type batchPlan struct {
	deps [][]int
	err  []*gateway.Error
}

// planBatch resolves every member's params.depends_on to member indexes. A reference to an
// id not in the batch, to an id two members share, or a cycle fails that member only.
func planBatch(members []jsonrpc.Member) batchPlan {
	n := len(members)
	p := batchPlan{err: make([]*gateway.Error, n)}
	ordered := true // no member names depends_on: no index, no graph
	for i := range members {
		m := &members[i]
		if m.Err != nil {
			p.err[i] = FromDecodeError(m.Err)
		} else if len(m.Request.DependsOn) > 0 {
			ordered = false
		}
	}
	if ordered {
		return p
	}
	p.deps = make([][]int, n)
	index := make(map[string]int, n) // id key → member, -1 when ambiguous
	for i := range members {
		m := &members[i]
		if m.Err != nil || m.Request.IsNotification() {
			continue
		}
		k := m.Request.ID.Key()
		if _, dup := index[k]; dup {
			index[k] = -1
		} else {
			index[k] = i
		}
	}
	for i := range members {
		if p.err[i] != nil {
			continue
		}
		for _, ref := range members[i].Request.DependsOn {
			j, ok := index[ref.Key()]
			switch {
			case !ok:
				p.err[i] = dependsOnError("depends_on names an id that is not in this batch")
			case j < 0:
				p.err[i] = dependsOnError("depends_on names an id that several members of this batch share")
			default:
				p.deps[i] = append(p.deps[i], j)
			}
			if p.err[i] != nil {
				p.deps[i] = nil
				break
			}
		}
	}
	p.failCycles()
	return p
}

func dependsOnError(reason string) *gateway.Error {
	return gateway.NewError(schemas.CodeInvalidParams).With("reason", reason)
}

// failCycles marks every member on a dependency cycle as failed (members that merely
// depend on a cycle fail later with DEPENDENCY_FAILED when it does): the members of every
// strongly connected component of more than one member, or of one that depends on itself
// (Tarjan's algorithm — a member joining a cycle only through a member already visited is
// on it too).
func (p *batchPlan) failCycles() {
	n := len(p.deps)
	index, low := make([]int, n), make([]int, n) // index 0: unvisited; visit order from 1
	onStack := make([]bool, n)
	var stack []int
	next := 1
	var visit func(i int)
	visit = func(i int) {
		index[i], low[i] = next, next
		next++
		stack = append(stack, i)
		onStack[i] = true
		self := false
		for _, j := range p.deps[i] {
			switch {
			case j == i:
				self = true
			case index[j] == 0:
				visit(j)
				low[i] = min(low[i], low[j])
			case onStack[j]:
				low[i] = min(low[i], index[j])
			}
		}
		if low[i] != index[i] {
			return
		}
		top := len(stack) - 1
		for stack[top] != i {
			top--
		}
		scc := stack[top:]
		if len(scc) > 1 || self {
			for _, s := range scc {
				p.err[s] = dependsOnError("depends_on forms a cycle")
			}
		}
		for _, s := range scc {
			onStack[s] = false
		}
		stack = stack[:top]
	}
	for i := range p.deps {
		if index[i] == 0 {
			visit(i)
		}
	}
	for i, e := range p.err {
		if e != nil {
			p.deps[i] = nil
		}
	}
}

// runBatch runs the members of a batch concurrently — at most batch.concurrency at
// once — each after the members it depends on, and returns their outcomes in request order.
// A member whose dependency failed fails with DEPENDENCY_FAILED without running.
func (p *Pipeline) runBatch(ctx context.Context, ex *Exchange, members []jsonrpc.Member) []Outcome {
	plan := planBatch(members)
	outs := make([]Outcome, len(members))
	calls := make([]gateway.Call, len(members)) // one allocation for the members' calls
	// The members run under one context bounded by the batch's deadline: the deadline
	// stage then gives a member that keeps it no deadline context (and timer) of its own.
	// Waiting for a turn or a dependency stays bounded by ctx alone, as each member's own
	// deadline is enforced by the stage when it runs.
	run := ctx
	if !ex.Deadline.IsZero() {
		var cancel context.CancelFunc
		run, cancel = context.WithDeadline(ctx, ex.Deadline)
		defer cancel()
	}
	if plan.deps == nil {
		p.runOrdered(ctx, run, ex, members, plan.err, outs, calls)
		return outs
	}
	done := make([]chan struct{}, len(members))
	for i := range done {
		done[i] = make(chan struct{})
	}
	sem := make(chan struct{}, p.BatchConcurrency)
	for i := range members {
		go func() {
			defer close(done[i])
			var deps []int
			if plan.deps != nil {
				deps = plan.deps[i]
			}
			outs[i] = p.runPlanned(ctx, run, ex, &members[i], plan.err[i], deps, outs, done, sem, &calls[i])
		}()
	}
	for i := range done {
		<-done[i]
	}
	return outs
}

// runOrdered runs the members of a batch without depends_on: min(batch.concurrency, n)
// workers — the calling goroutine one of them — take the members in request order, so at
// most batch.concurrency run at once and a batch runs inline when the bound is 1.
func (p *Pipeline) runOrdered(ctx, run context.Context, ex *Exchange, members []jsonrpc.Member, planErr []*gateway.Error,
	outs []Outcome, calls []gateway.Call) {
	var next atomic.Int64
	work := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= len(members) {
				return
			}
			outs[i] = p.runMember(ctx, run, ex, &members[i], planErr[i], &calls[i])
		}
	}
	workers := min(p.BatchConcurrency, len(members))
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
}

// runMember runs member m whose dependencies are done, in c, under run (ctx bounded by the
// batch's deadline).
func (p *Pipeline) runMember(ctx, run context.Context, ex *Exchange, m *jsonrpc.Member, planErr *gateway.Error, c *gateway.Call) Outcome {
	if planErr != nil {
		return Outcome{Err: planErr, ID: memberID(m), Silent: m.Err == nil && m.Request.IsNotification()}
	}
	if ctx.Err() != nil {
		return Outcome{Err: gateway.AsError(ctx.Err()).With("layer", "batch"), ID: m.Request.ID, Silent: m.Request.IsNotification()}
	}
	return p.call(run, ex, &m.Request, false, c)
}

// runPlanned runs member m under run once its dependencies are done and a concurrency slot
// is free.
func (p *Pipeline) runPlanned(ctx, run context.Context, ex *Exchange, m *jsonrpc.Member, planErr *gateway.Error,
	deps []int, outs []Outcome, done []chan struct{}, sem chan struct{}, c *gateway.Call) Outcome {
	id := memberID(m)
	silent := m.Err == nil && m.Request.IsNotification()
	if planErr != nil {
		return Outcome{Err: planErr, ID: id, Silent: silent}
	}
	for _, j := range deps {
		select {
		case <-done[j]:
		case <-ctx.Done():
			return Outcome{Err: gateway.AsError(ctx.Err()).With("layer", "batch"), ID: id, Silent: silent}
		}
		if outs[j].Err != nil {
			err := gateway.NewError(schemas.CodeDependencyFailed).With("depends_on", jsonID(outs[j].ID))
			return Outcome{Err: err, ID: id, Silent: silent}
		}
	}
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return Outcome{Err: gateway.AsError(ctx.Err()).With("layer", "batch"), ID: id, Silent: silent}
	}
	defer func() { <-sem }()
	return p.call(run, ex, &m.Request, false, c)
}

func memberID(m *jsonrpc.Member) jsonrpc.ID {
	if m.Err != nil {
		return m.Err.ID
	}
	return m.Request.ID
}

// jsonID returns an id as a value encoding/json writes back as the same JSON.
func jsonID(id jsonrpc.ID) any { return rawJSON(id.Raw()) }

type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }
