package approval

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth/policy"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/gateway/adminparams"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Modes of a call that needs approval (approvals.mode, params.approval_mode).
const (
	// ModeWait holds the call until the decision (or max_wait, or its deadline).
	ModeWait = "wait"
	// ModeAsync answers at once with 4004 APPROVAL_PENDING and an approval_id, which the
	// caller redeems later with approvals.redeem.
	ModeAsync = "async"
)

// ModeMember is the params member with which a caller chooses the mode of its call
// ("wait" or "async"). The approval stage removes it from every call's object params, so
// the backend never sees it.
const ModeMember = "approval_mode"

// MethodRedeem is the boundary method with which a caller redeems an asynchronous
// approval: params {"approval_id": id}. It answers the approved call's result (running it
// once), or 4004 while the approval is pending, or 4003 when it was denied or expired.
const MethodRedeem = "approvals.redeem"

// modeMarker is how cutMode tells params that cannot hold the member without decoding
// them: the member's name, or any \u escape (which could spell it).
var modeMarker = []byte(ModeMember)

// cutMode removes params.approval_mode from call and returns the call's mode: the one it
// chose, else approvals.mode. A value other than "wait" or "async" is INVALID_PARAMS.
func (s *stage) cutMode(call *gateway.Call) (string, error) {
	p := call.Params
	if len(p) == 0 || p[0] != '{' || (!bytes.Contains(p, modeMarker) && !bytes.Contains(p, []byte(`\u`))) {
		return s.cfg.Mode, nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(p, &members); err != nil {
		return "", gateway.Errorf(schemas.CodeInvalidParams, "params are not a well-formed JSON object").Wrap(err)
	}
	raw, ok := members[ModeMember]
	if !ok {
		return s.cfg.Mode, nil
	}
	var mode string
	if json.Unmarshal(raw, &mode) != nil || (mode != ModeWait && mode != ModeAsync) {
		return "", gateway.Errorf(schemas.CodeInvalidParams, "approval_mode must be \"wait\" or \"async\"").
			With("param", ModeMember).With("reason", "approval_mode_invalid")
	}
	delete(members, ModeMember)
	rest, err := json.Marshal(members)
	if err != nil {
		return "", gateway.NewError(schemas.CodeInternal).Wrap(err)
	}
	call.Params = rest
	return mode, nil
}

// holdAsync records call as a pending asynchronous approval, keeps its params for the
// redeem, and returns the 4004 answer that names it.
func (s *stage) holdAsync(ctx context.Context, call *gateway.Call, d policy.Decision) error {
	rec, err := s.create(ctx, call, d, ModeAsync, s.cfg.Timeout)
	if err != nil {
		return err
	}
	if err := s.store.KeepCall(ctx, rec.ID, call.Params, s.cfg.Timeout+s.cfg.ResultTTL+decidedGrace); err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if _, derr := s.store.Decide(cctx, rec.ID, Withdrawn, System, "the call could not be kept"); derr != nil && !isDecided(derr) {
			s.log.ErrorContext(ctx, "withdrawing an approval whose call was not kept", "approval_id", rec.ID, "err", derr)
		}
		return gateway.AsError(err)
	}
	return pendingError(rec, s.cfg.RetryAfter)
}

// pendingError is the 4004 answer for the pending asynchronous approval rec.
func pendingError(rec Record, retry time.Duration) *gateway.Error {
	return gateway.NewError(schemas.CodeApprovalPending).
		With("approval", string(Pending)).
		With("approval_id", rec.ID).
		With("expires_at", rec.Expires.UTC().Format(time.RFC3339Nano)).
		With("redeem", map[string]any{"method": MethodRedeem, "params": map[string]string{"approval_id": rec.ID}}).
		With("retry_after_ms", max(retry.Milliseconds(), 1))
}

// callerOf is who a call's approval belongs to: only the same caller may redeem it.
func callerOf(p gateway.Principal) string { return p.Subject }

// redeemKey marks the context of a redeemed call with its approval.
type redeemKey struct{}

// redeems reports whether call is the approved call that the redeem running in ctx
// replays: then it needs no new approval.
func redeems(ctx context.Context, call *gateway.Call) bool {
	rec, ok := ctx.Value(redeemKey{}).(Record)
	if !ok || rec.Method != call.Method {
		return false
	}
	digest, err := Digest(call.Method, call.Params)
	return err == nil && digest == rec.Digest
}

// NewRedeemStage returns the stage that serves approvals.redeem: it belongs above the
// route stage (the method has no target), and replays the approved call through next —
// route, policy and every stage below — with the approval stage letting it through. Other
// methods pass untouched. A nil store returns nil, which leaves it out.
func NewRedeemStage(cfg Config, store Store, now func() time.Time, log *slog.Logger) gateway.Middleware {
	if store == nil {
		return nil
	}
	r := &redeemer{store: store, cfg: cfg, now: now, log: log}
	return func(next gateway.Handler) gateway.Handler {
		return func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
			if call.Method != MethodRedeem {
				return next(ctx, call)
			}
			return r.redeem(ctx, call, next)
		}
	}
}

// redeemer serves approvals.redeem (NewRedeemStage).
type redeemer struct {
	store Store
	cfg   Config
	now   func() time.Time
	log   *slog.Logger
}

// unknownError answers a redeem of an id that is unknown, or another caller's: the same
// answer, so a caller learns nothing of approvals not its own.
func unknownError(id string) *gateway.Error {
	return gateway.Errorf(schemas.CodeApprovalDenied, "Unknown approval").
		With("approval", "unknown").With("reason", "unknown_approval").With("approval_id", id)
}

// redeem answers one approvals.redeem call.
func (r *redeemer) redeem(ctx context.Context, call *gateway.Call, next gateway.Handler) (*gateway.Result, error) {
	p, err := adminparams.Object(call.Params, "approval_id")
	if err != nil {
		return nil, err
	}
	var id string
	if json.Unmarshal(p["approval_id"], &id) != nil || id == "" || len(id) > 64 {
		return nil, adminparams.Invalid("approval_id", "must be the non-empty string a 4004 answer gave")
	}
	rec, ok, err := r.store.Lookup(ctx, id)
	switch {
	case err != nil:
		return nil, gateway.AsError(err)
	case !ok || rec.Mode != ModeAsync || rec.Caller != callerOf(call.Principal):
		return nil, unknownError(id)
	}
	if rec.Status == Pending && !r.now().Before(rec.Expires) {
		if rec, err = r.store.Decide(ctx, id, Expired, System, "timeout"); err != nil && !isDecided(err) {
			return nil, gateway.AsError(err)
		}
	}
	switch rec.Status {
	case Pending:
		return nil, pendingError(rec, r.cfg.RetryAfter)
	case Approved:
		return r.run(ctx, call, rec, next)
	default:
		return nil, decisionError(rec.Status, id)
	}
}

// run answers the redeem of the approved rec: the kept outcome, or — for the one redeem
// that claims it — the call run through next, its outcome kept for later redeems.
func (r *redeemer) run(ctx context.Context, call *gateway.Call, rec Record, next gateway.Handler) (*gateway.Result, error) {
	if out, ok, err := r.store.Outcome(ctx, rec.ID); err != nil || ok {
		if err != nil {
			return nil, gateway.AsError(err)
		}
		return replay(out, rec.ID)
	}
	if !r.now().Before(rec.DecidedAt.Add(r.cfg.ResultTTL)) {
		return nil, decisionError(Expired, rec.ID).With("reason", "redeem_window_passed")
	}
	params, ok, err := r.store.Call(ctx, rec.ID)
	switch {
	case err != nil:
		return nil, gateway.AsError(err)
	case !ok:
		return nil, decisionError(Expired, rec.ID).With("reason", "redeem_window_passed")
	}
	until := r.now().Add(r.cfg.ResultTTL)
	if dl, ok := ctx.Deadline(); ok {
		until = dl
	}
	claimed, err := r.store.Claim(ctx, rec.ID, until, r.cfg.ResultTTL+r.cfg.Timeout)
	if err != nil {
		return nil, gateway.AsError(err)
	}
	if !claimed {
		return r.running(ctx, rec)
	}
	orig := *call
	orig.Method, orig.Params = rec.Method, params
	res, err := next(context.WithValue(ctx, redeemKey{}, rec), &orig)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err != nil && notRun(err) {
		if rerr := r.store.Release(cctx, rec.ID); rerr != nil {
			r.log.WarnContext(ctx, "releasing a redeem claim", "approval_id", rec.ID, "err", rerr)
		}
		return nil, err
	}
	if kerr := r.store.KeepOutcome(cctx, rec, outcomeOf(res, err), r.cfg.ResultTTL); kerr != nil {
		r.log.ErrorContext(ctx, "keeping a redeemed call's outcome", "approval_id", rec.ID, "err", kerr)
	}
	return res, err
}

// running answers a redeem of a call another redeem claimed: its outcome once kept, 4004
// while it runs, an internal error when the claiming redeem went past its deadline
// without keeping one (the call may have run: it is never run again).
func (r *redeemer) running(ctx context.Context, rec Record) (*gateway.Result, error) {
	if out, ok, err := r.store.Outcome(ctx, rec.ID); err != nil || ok {
		if err != nil {
			return nil, gateway.AsError(err)
		}
		return replay(out, rec.ID)
	}
	until, ok, err := r.store.Claimed(ctx, rec.ID)
	switch {
	case err != nil:
		return nil, gateway.AsError(err)
	case ok && r.now().After(until.Add(cleanupTimeout)):
		return nil, gateway.Errorf(schemas.CodeInternal, "The approved call's outcome was lost").
			With("reason", "outcome_lost").With("approval_id", rec.ID)
	}
	return nil, pendingError(rec, r.cfg.RetryAfter).With("approval", "running")
}

// notRun reports whether err refused the call before it could reach its backend, for a
// reason that passes (rate limit, overload, open breaker): the redeem can be tried again.
func notRun(err error) bool {
	ge := gateway.AsError(err)
	switch ge.Code() {
	case schemas.CodeRateLimited, schemas.CodeOverloaded, schemas.CodeCircuitOpen:
		return true
	}
	return false
}

// outcomeOf is the outcome to keep of a redeemed call's answer.
func outcomeOf(res *gateway.Result, err error) Outcome {
	if err != nil {
		ge := gateway.AsError(err)
		return Outcome{Error: &OutcomeError{Code: ge.Code(), Message: ge.Message(), Data: ge.Data()}}
	}
	if res == nil {
		return Outcome{Result: json.RawMessage("null")}
	}
	if res.Stream != nil {
		return Outcome{Unkept: true}
	}
	v := res.Value
	if v == nil {
		v = []byte("null")
	}
	return Outcome{Result: append(json.RawMessage(nil), v...)}
}

// replay answers a redeem from a kept outcome.
func replay(out Outcome, id string) (*gateway.Result, error) {
	switch {
	case out.Error != nil:
		e := gateway.Errorf(out.Error.Code, "%s", out.Error.Message)
		for k, v := range out.Error.Data {
			e = e.With(k, v)
		}
		return nil, e
	case out.Unkept:
		return nil, gateway.Errorf(schemas.CodeInvalidParams, "The approved call ran; its streamed result was not kept").
			With("reason", "result_not_kept").With("approval_id", id)
	}
	return gateway.NewResult(out.Result), nil
}
