package faces

import (
	"context"
	"slices"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// batchPlan is the dependency graph of one batch: deps[i] lists the members member i waits
// for; err[i] is set for members that cannot run (bad decode, unknown or ambiguous id,
// cycle).
type batchPlan struct {
	deps [][]int
	err  []*gateway.Error
}

// planBatch resolves every member's params.depends_on to member indexes. A reference to an
// id not in the batch, to an id two members share, or a cycle fails that member only.
func planBatch(members []jsonrpc.Member) batchPlan {
	n := len(members)
	p := batchPlan{deps: make([][]int, n), err: make([]*gateway.Error, n)}
	index := make(map[string]int, n) // id key → member, -1 when ambiguous
	for i := range members {
		m := &members[i]
		if m.Err != nil {
			p.err[i] = FromDecodeError(m.Err)
			continue
		}
		if m.Request.IsNotification() {
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
// depend on a cycle fail later with DEPENDENCY_FAILED when it does).
func (p *batchPlan) failCycles() {
	const (
		unvisited = iota
		onStack
		done
	)
	state := make([]uint8, len(p.deps))
	var stack []int
	var visit func(i int)
	visit = func(i int) {
		state[i] = onStack
		stack = append(stack, i)
		for _, j := range p.deps[i] {
			switch state[j] {
			case unvisited:
				visit(j)
			case onStack:
				for _, s := range slices.Backward(stack) {
					p.err[s] = dependsOnError("depends_on forms a cycle")
					if s == j {
						break
					}
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[i] = done
	}
	for i := range p.deps {
		if state[i] == unvisited {
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
	done := make([]chan struct{}, len(members))
	for i := range done {
		done[i] = make(chan struct{})
	}
	sem := make(chan struct{}, p.BatchConcurrency)
	for i := range members {
		go func() {
			defer close(done[i])
			outs[i] = p.runPlanned(ctx, ex, &members[i], plan.err[i], plan.deps[i], outs, done, sem)
		}()
	}
	for i := range done {
		<-done[i]
	}
	return outs
}

// runPlanned runs member m once its dependencies are done and a concurrency slot is free.
func (p *Pipeline) runPlanned(ctx context.Context, ex *Exchange, m *jsonrpc.Member, planErr *gateway.Error,
	deps []int, outs []Outcome, done []chan struct{}, sem chan struct{}) Outcome {
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
	return p.Call(ctx, ex, &m.Request, false)
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
