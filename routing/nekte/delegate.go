package nekte

import (
	"context"
	"encoding/json"
	"time"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
)

// delegate registers a task, starts it, and answers with its event stream.
func (s *Service) delegate(ctx context.Context, owner string, p *delegateParams) (*gateway.Result, error) {
	if s.isClosing() {
		return nil, errShuttingDown()
	}
	r, c, se, err := s.prepare(ctx, owner, p)
	if err != nil {
		return nil, err
	}
	if err := s.tasks.create(ctx, r); err != nil {
		return nil, err
	}
	s.recent.add(owner, r.ID)
	if err := s.admit(ctx, r, se); err != nil {
		return nil, err
	}
	var ts *taskStream
	r, err = s.commit(ctx, owner, r.ID, func(r *record) error { return move(r, nk.TaskAccepted, "", s.nowMs()) })
	if err == nil {
		ts, err = s.attach(ctx, owner, r.ID)
	}
	if err == nil {
		var env *envelope
		if se != nil {
			env = &se.Envelope
		}
		err = s.start(ctx, r, c, env, nil)
	}
	if err != nil {
		if ts != nil {
			_ = ts.Close()
		}
		s.abandon(ctx, owner, p.Task.ID, gateway.AsError(err))
		return nil, err
	}
	return &gateway.Result{Stream: ts, Events: true}, nil
}

// prepare resolves what a delegated task runs — its capability, its input, its context —
// and returns its new record (pending).
func (s *Service) prepare(ctx context.Context, owner string, p *delegateParams) (*record, capability.Capability, *storedEnvelope, error) {
	t := &p.Task
	c, err := s.capabilityFor(t)
	if err != nil {
		return nil, c, nil, err
	}
	input, err := s.inputOf(t)
	if err != nil {
		return nil, c, nil, err
	}
	timeoutMs, err := boundedTimeoutMs(ctx, s.timeoutMs(t.TimeoutMs), time.Now())
	if err != nil {
		return nil, c, nil, err
	}
	tc, se, err := s.contexts.forDelegate(ctx, owner, c.ID, p.Context)
	if err != nil {
		return nil, c, nil, err
	}
	now := s.nowMs()
	return &record{
		ID: t.ID, Owner: owner, Cap: c.ID, Hash: c.Hash, Desc: t.Desc, Input: input,
		Budget: t.Budget.Effective(), Status: nk.TaskPending, Attempt: 1,
		CreatedAt: now, UpdatedAt: now, TimeoutMs: timeoutMs,
		NoDerive: se != nil && !se.Envelope.Permissions.Derive, Context: tc,
	}, c, se, nil
}

// admit counts a new task in its owner's quota and keeps its persist: false context in
// this process; when either fails the task is discarded, leaving its id free.
func (s *Service) admit(ctx context.Context, r *record, se *storedEnvelope) error {
	err := s.tasks.admit(ctx, r.Owner, r.ID)
	if err == nil && r.Context != nil && r.Context.Local {
		if err = s.contexts.keepLocal(ctx, r.Owner, r.ID, se); err != nil {
			_ = s.tasks.release(context.WithoutCancel(ctx), r.Owner, r.ID)
		}
	}
	if err != nil {
		_ = s.tasks.discard(context.WithoutCancel(ctx), r.Owner, r.ID)
	}
	return err
}

// capabilityFor returns the capability a task runs: task.cap, else the best match for
// task.desc.
func (s *Service) capabilityFor(t *delegateTask) (capability.Capability, error) {
	if t.Cap != "" {
		c, ok := s.catalog.Lookup(t.Cap)
		if !ok {
			return c, errCapabilityNotFound(t.Cap)
		}
		return c, nil
	}
	if t.Desc == "" {
		return capability.Capability{}, errNoMatch()
	}
	c, ok := s.catalog.Match(t.Desc)
	if !ok {
		return c, errNoMatch()
	}
	return c, nil
}

// inputOf returns a task's input: task.in without insignificant white space, or {} when
// the task names none (a reference client sends only a description).
func (s *Service) inputOf(t *delegateTask) (json.RawMessage, error) {
	if len(t.In) > s.cfg.Tasks.MaxInputBytes {
		return nil, errTooLarge("task.in", s.cfg.Tasks.MaxInputBytes)
	}
	if len(t.In) == 0 {
		return json.RawMessage("{}"), nil
	}
	return compactJSON(t.In), nil
}

// timeoutMs returns a task's running time limit: timeout_ms, or the default, at most the
// maximum.
func (s *Service) timeoutMs(ms int64) int64 {
	limit := s.cfg.Tasks.MaxTimeout.Milliseconds()
	if ms <= 0 {
		return min(s.cfg.Tasks.DefaultTimeout.Milliseconds(), limit)
	}
	return min(ms, limit)
}

// boundedTimeoutMs lowers a task's running time limit to the time left before the
// delegating call's deadline, less the hop reserve, when the caller named that deadline
// (gateway.CallerDeadline): a caller that must have its answer by then gains nothing from a
// task that runs on, and the gateway would be waiting on it past the caller's deadline. A
// deadline the caller did not name (deadline.default) does not bound the task, which
// outlives the request that started it. Less than ε left refuses the delegation:
// DEADLINE_EXCEEDED, layer task.
func boundedTimeoutMs(ctx context.Context, timeoutMs int64, now time.Time) (int64, error) {
	dl, ok := gateway.CallerDeadline(ctx)
	if !ok {
		return timeoutMs, nil
	}
	hop, err := gateway.HopBudgetFrom(ctx).Deadline(now, dl, gateway.LayerTask)
	if err != nil {
		return 0, err
	}
	return min(timeoutMs, max(hop.Sub(now).Milliseconds(), 1)), nil
}

// abandon fails a task that could not be started.
func (s *Service) abandon(ctx context.Context, owner, id string, e *gateway.Error) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalWriteTimeout)
	defer cancel()
	r, err := s.commit(wctx, owner, id, func(r *record) error { return s.failChange(r, e) })
	if err == nil {
		s.released(wctx, r)
	}
}
