package nekte

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"time"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// progressQueue bounds the progress reports waiting to be recorded; past it reports are
// dropped (progress is advisory, and the backend's reader must never block on us).
const progressQueue = 64

// finalWriteTimeout bounds recording a task's suspension when the service is closing.
const finalWriteTimeout = 2 * time.Second

// execution is one run of a task: it moves the task to running, invokes the capability,
// records progress and partial results as they come, and records how the run ended. Only
// the run's own goroutine touches it, except onProgress.
type execution struct {
	s      *Service
	rn     *run
	cap    capability.Capability
	rec    *record // as the run started
	budget nk.Budget

	progress chan gateway.Progress
	partials chan []byte
	outcome  chan outcome
}

// outcome is how the capability call ended: the result's JSON, or an error.
type outcome struct {
	value json.RawMessage
	err   error
}

func newExecution(s *Service, rn *run, c capability.Capability, r *record) *execution {
	return &execution{
		s: s, rn: rn, cap: c, rec: r, budget: r.Budget.Effective(),
		progress: make(chan gateway.Progress, progressQueue),
		partials: make(chan []byte),
		outcome:  make(chan outcome, 1),
	}
}

// run executes the task until it ends, is cancelled, suspended or moved on elsewhere.
func (x *execution) run(ctx context.Context) {
	r, err := x.beginRetrying(ctx)
	if err != nil {
		if errors.Is(context.Cause(ctx), errCauseClosing) {
			x.suspendSelf(ctx)
			return
		}
		if !errors.Is(err, errStale) && ctx.Err() == nil {
			x.s.logf("starting a task", x.rn.owner, x.rn.id, err)
		}
		return
	}
	remaining := time.Duration(r.TimeoutMs-r.runningMs(x.s.nowMs())) * time.Millisecond
	if remaining <= 0 {
		x.fail(ctx, errTaskTimeout(r.ID, r.TimeoutMs))
		return
	}
	cctx, cancel := context.WithTimeoutCause(ctx, remaining, errCauseTimeout)
	defer cancel()
	go x.call(gateway.WithProgress(cctx, x.onProgress))
	x.loop(ctx, cctx)
}

// beginRetrying is begin, tried again while the state store fails (Redis restarting, a
// network blip), for at most the task's timeout: a task whose start could not be recorded
// would otherwise stay accepted with nobody to run it, and its streams would never end.
// When the store is still failing at the end, the task is failed (if that can be recorded).
func (x *execution) beginRetrying(ctx context.Context) (*record, error) {
	r, err := x.begin(ctx)
	limit := time.Now().Add(time.Duration(x.rec.TimeoutMs) * time.Millisecond)
	for pause := beginRetryPause; err != nil && !errors.Is(err, errStale) && ctx.Err() == nil; pause = min(2*pause, time.Second) {
		if !time.Now().Add(pause).Before(limit) {
			x.fail(ctx, errTaskFailed(x.rn.id, "the state store was unavailable when it was to start"))
			return nil, err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		r, err = x.begin(ctx)
	}
	return r, err
}

// beginRetryPause is the first pause before beginRetrying tries again.
const beginRetryPause = 50 * time.Millisecond

// begin moves a newly delegated task from accepted to running; a resumed task is running
// already.
func (x *execution) begin(ctx context.Context) (*record, error) {
	if x.rec.Status == nk.TaskRunning {
		return x.rec, nil
	}
	return x.s.commit(ctx, x.rn.owner, x.rn.id, func(r *record) error {
		if r.Attempt != x.rn.attempt || r.Status != nk.TaskAccepted {
			return errStale // cancelled before it could start
		}
		now := x.s.nowMs()
		if err := move(r, nk.TaskRunning, "", now); err != nil {
			return err
		}
		r.LeaseUntil = x.s.lease(now)
		return nil
	})
}

// onProgress is the progress sink of the capability call; it never blocks.
func (x *execution) onProgress(p gateway.Progress) {
	select {
	case x.progress <- p:
	default:
	}
}

// call invokes the capability and collects its result; a streamed result's messages also
// go to the loop as partial results.
func (x *execution) call(ctx context.Context) {
	res, err := x.s.invoker.Invoke(ctx, x.cap, x.rec.Input)
	if err == nil && res == nil {
		err = gateway.NewError(schemas.CodeInternal)
	}
	if err != nil {
		x.outcome <- outcome{err: err}
		return
	}
	v, err := x.collect(ctx, res)
	x.outcome <- outcome{value: v, err: err}
}

// collect returns the result's JSON, handing a streamed result's messages to the loop as
// partial results.
func (x *execution) collect(ctx context.Context, res *gateway.Result) (json.RawMessage, error) {
	return collectResult(ctx, res, x.s.cfg.Tasks.MaxResultBytes, func(msg []byte) error {
		select {
		case x.partials <- msg:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
}

// collectResult returns a result's JSON: its value, or the JSON array of a stream's
// messages, each also passed to onMessage (which may be nil). It closes the stream.
func collectResult(ctx context.Context, res *gateway.Result, limit int, onMessage func([]byte) error) (json.RawMessage, error) {
	if res.Stream == nil {
		if len(res.Value) > limit {
			return nil, resultTooLarge(limit)
		}
		if len(bytes.TrimSpace(res.Value)) == 0 {
			return json.RawMessage(jsonNull), nil
		}
		return res.Value, nil
	}
	defer func() { _ = res.Stream.Close() }()
	all := []byte{'['}
	for n := 0; ; n++ {
		msg, err := res.Stream.Recv(ctx)
		if errors.Is(err, io.EOF) {
			return append(all, ']'), nil
		}
		if err != nil {
			return nil, err
		}
		if len(all)+len(msg)+2 > limit {
			return nil, resultTooLarge(limit)
		}
		if n > 0 {
			all = append(all, ',')
		}
		all = append(all, msg...)
		if onMessage != nil {
			if err := onMessage(bytes.Clone(msg)); err != nil {
				return nil, err
			}
		}
	}
}

func resultTooLarge(limit int) error {
	return gateway.Errorf(schemas.CodeTaskFailed, "the result is larger than %d bytes", limit)
}

// loop records progress and partial results until the call ends, checking every poll
// interval that no other process moved the task.
func (x *execution) loop(ctx, cctx context.Context) {
	tick := time.NewTicker(x.s.cfg.Tasks.PollInterval)
	defer tick.Stop()
	for {
		select {
		case p := <-x.progress:
			x.recordProgress(ctx, p)
		case m := <-x.partials:
			x.recordPartial(ctx, m)
		case o := <-x.outcome:
			if len(x.progress) > 0 {
				x.recordProgress(ctx, <-x.progress)
			}
			x.finish(ctx, cctx, o)
			return
		case <-tick.C:
			x.watch(ctx)
		}
	}
}

// write applies a change to the running task, provided it is still this run's; when it
// is not, the run is stopped.
func (x *execution) write(ctx context.Context, change func(r *record, now int64)) {
	if ctx.Err() != nil {
		return
	}
	_, err := x.s.commit(ctx, x.rn.owner, x.rn.id, func(r *record) error {
		if r.Status != nk.TaskRunning || r.Attempt != x.rn.attempt {
			return errStale
		}
		change(r, x.s.nowMs())
		return nil
	})
	switch {
	case errors.Is(err, errStale) || isNotFound(err):
		x.rn.cancel(errCauseMovedOn)
	case err != nil && ctx.Err() == nil:
		x.s.logf("recording task progress", x.rn.owner, x.rn.id, err)
	}
}

// recordProgress records p and every report queued behind it, with one write.
func (x *execution) recordProgress(ctx context.Context, p gateway.Progress) {
	batch := []Progress{progressOf(p)}
	for len(x.progress) > 0 {
		batch = append(batch, progressOf(<-x.progress))
	}
	x.write(ctx, func(r *record, now int64) {
		for _, pr := range batch {
			r.Progress, r.UpdatedAt = pr, now
			r.emit(nk.ProgressEvent{Processed: pr.Processed, Total: pr.Total, Message: pr.Message})
		}
	})
}

func progressOf(p gateway.Progress) Progress {
	pr := Progress{Processed: round(p.Progress), Message: truncate(p.Message, maxMessageLen)}
	if p.Total != nil {
		pr.Total = round(*p.Total)
	}
	return pr
}

func (x *execution) recordPartial(ctx context.Context, msg []byte) {
	levels, err := nk.JSONLevels(msg)
	if err != nil {
		return // not JSON: nothing to show as a partial result; the final result will fail
	}
	out, level, _ := nk.Resolve(levels, &x.budget)
	x.write(ctx, func(r *record, now int64) {
		r.UpdatedAt = now
		r.emit(nk.PartialEvent{Out: out, ResolvedLevel: level})
	})
}

// watch stops the run when the record says another process moved the task on, and
// renews the run's lease when it is due (lease.go).
func (x *execution) watch(ctx context.Context) {
	r, err := x.s.tasks.get(ctx, x.rn.owner, x.rn.id)
	switch {
	case isNotFound(err):
		x.rn.cancel(errCauseMovedOn)
	case err != nil:
		return
	case r.Status != nk.TaskRunning || r.Attempt != x.rn.attempt:
		x.rn.cancel(errCauseMovedOn)
	case x.s.renewDue(r, x.s.nowMs()):
		x.write(ctx, func(r *record, now int64) { r.LeaseUntil = x.s.lease(now) })
	}
}

// finish records how the run ended: completed, failed, timed out — or nothing, when the
// run was stopped by whoever moved the task (cancel, suspend), who recorded it.
func (x *execution) finish(ctx, cctx context.Context, o outcome) {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errCauseClosing):
		x.suspendSelf(ctx)
		return
	case cause != nil:
		return
	}
	if o.err != nil {
		if timedOut(cctx, o.err) {
			x.fail(ctx, errTaskTimeout(x.rn.id, x.rec.TimeoutMs))
			return
		}
		x.fail(ctx, errTaskFailed(x.rn.id, failureText(o.err)))
		return
	}
	x.complete(ctx, o.value)
}

// deadlineSlack is how close to the end of a task's running time a deadline error of its
// call counts as the task's timeout: the stages the call runs through bound it by the
// same deadline with timers of their own (which may fire first) and refuse it when less
// than their minimum is left.
const deadlineSlack = time.Second

// timedOut reports whether a run whose call, under cctx, failed with err ran out of
// time: cctx's deadline passed, or the call hit a deadline with cctx's about to.
func timedOut(cctx context.Context, err error) bool {
	if errors.Is(context.Cause(cctx), errCauseTimeout) {
		return true
	}
	dl, ok := cctx.Deadline()
	isDeadline := errors.Is(err, context.DeadlineExceeded) || gateway.AsError(err).Code() == schemas.CodeDeadlineExceeded
	return ok && isDeadline && time.Until(dl) < deadlineSlack
}

// failureText is what a failed task's error says about why: what an MCP tool that
// reported isError said (toolFailureText), the client-safe message of a *gateway.Error,
// or the text of the gateway's own plain errors (newResultOf's).
func failureText(err error) string {
	if text, ok := toolFailureText(err); ok {
		return truncate(text, maxMessageLen)
	}
	if ge, ok := errors.AsType[*gateway.Error](err); ok {
		return truncate(ge.Message(), maxMessageLen)
	}
	return truncate(err.Error(), maxMessageLen)
}

// fail records the task as failed with e, and emits error.
func (x *execution) fail(ctx context.Context, e *gateway.Error) {
	r, err := x.s.commit(ctx, x.rn.owner, x.rn.id, func(r *record) error {
		if r.Attempt != x.rn.attempt {
			return errStale
		}
		return x.s.failChange(r, e)
	})
	x.ended(ctx, r, err)
}

// complete records the task's result: its levels within the budget in complete, and its
// signed receipt.
func (x *execution) complete(ctx context.Context, value json.RawMessage) {
	res, err := newResultOf(x.cap, value)
	if err != nil {
		x.fail(ctx, errTaskFailed(x.rn.id, failureText(err)))
		return
	}
	out, tokens := res.within(x.budget)
	inHash, err := digest(x.rec.Input)
	if err != nil {
		x.fail(ctx, errTaskFailed(x.rn.id, "the task's input is not JSON"))
		return
	}
	r, err := x.s.commit(ctx, x.rn.owner, x.rn.id, func(r *record) error {
		if r.Attempt != x.rn.attempt {
			return errStale
		}
		now := x.s.nowMs()
		if err := move(r, nk.TaskCompleted, "", now); err != nil {
			return err
		}
		r.Hash = x.cap.Hash
		jws, err := x.s.signer.sign(receiptClaims{
			TaskID: r.ID, Cap: r.Cap, H: r.Hash, InputSHA256: inHash, OutputSHA256: res.digest,
			CreatedAt: r.CreatedAt, CompletedAt: now,
		}, now)
		if err != nil {
			return err
		}
		r.Receipt, r.Checkpoint = jws, nil
		r.emit(nk.CompleteEvent{TaskID: r.ID, Out: out, Meta: &nk.Meta{Ms: r.ElapsedMs, TokensUsed: tokens}})
		return nil
	})
	if err == nil {
		x.s.catalog.Observe(x.cap.ID, time.Duration(r.ElapsedMs)*time.Millisecond, tokens)
	}
	x.ended(ctx, r, err)
}

// ended finishes the bookkeeping of a task that reached a final state.
func (x *execution) ended(ctx context.Context, r *record, err error) {
	switch {
	case err == nil:
		x.s.released(ctx, r)
	case errors.Is(err, errStale) || isNotFound(err):
	default:
		x.s.logf("recording the end of a task", x.rn.owner, x.rn.id, err)
	}
}

// suspendSelf suspends the task when the service closes under it; a task that had not
// started running yet fails instead (there is nothing to resume).
func (x *execution) suspendSelf(ctx context.Context) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalWriteTimeout)
	defer cancel()
	r, err := x.s.commit(wctx, x.rn.owner, x.rn.id, func(r *record) error {
		if r.Attempt != x.rn.attempt {
			return errStale
		}
		if r.Status == nk.TaskAccepted {
			return x.s.failChange(r, errShuttingDown())
		}
		return x.s.suspendChange(r, "gateway shutting down")
	})
	if err == nil && r.Status.Terminal() {
		x.s.released(wctx, r)
	}
	var ge *gateway.Error
	switch {
	case err == nil, errors.Is(err, errStale), isNotFound(err):
	case errors.As(err, &ge) && ge.Code() == schemas.CodeTaskNotResumable:
		// it finished meanwhile
	default:
		x.s.logf("suspending a task at shutdown", x.rn.owner, x.rn.id, err)
	}
}

// round converts a progress figure to the wire's integer.
func round(f float64) int {
	switch {
	case math.IsNaN(f) || f < 0:
		return 0
	case f > math.MaxInt32:
		return math.MaxInt32
	default:
		return int(math.Round(f))
	}
}
