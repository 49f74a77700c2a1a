package approval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth/policy"
	canonjson "github.com/gatehouse-dev/gatehouse/codecs/canonical"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
)

// cleanupTimeout bounds the state store writes that record a withdrawal or an expiry after
// the caller's context is done.
const cleanupTimeout = 5 * time.Second

// NewStage returns the approval stage: it holds each call whose policy decision
// (policy.DecisionFrom) needs approval as a pending approval in store and waits, polling
// the record, until an operator approves it (the call runs), denies it (4003 "approval
// denied"), or its time runs out (4003 "approval expired"). A caller that goes away
// withdraws its approval; a call whose own deadline comes first fails with
// DEADLINE_EXCEEDED and its approval expires. log receives the audit of each held call.
//
// The decision may be written by any replica sharing the store: the waiting replica learns
// it by polling every approvals.poll_interval. (A Redis backend may later notify waiters by
// pub/sub instead; the records stay the same.)
//
// cfg has its defaults applied (Config.WithDefaults). The stage belongs in the chain
// whenever the policy stage is (nothing else can need approval); a nil store returns nil,
// which leaves it out.
func NewStage(cfg Config, store Store, now func() time.Time, log *slog.Logger) gateway.Middleware {
	if store == nil {
		return nil
	}
	s := &stage{store: store, cfg: cfg, now: now, log: log}
	return s.wrap
}

// stage is the approval stage of one configuration (NewStage).
type stage struct {
	store Store
	cfg   Config
	now   func() time.Time
	log   *slog.Logger
}

// NewStore returns the store of pending approvals and their audit records over the state
// store's kv, keeping audit records for cfg.AuditTTL; log receives each decision.
func NewStore(kv state.KV, cfg Config, now func() time.Time, log *slog.Logger) Store {
	return &kvStore{kv: kv, now: now, log: log, auditTTL: cfg.AuditTTL}
}

func (s *stage) wrap(next gateway.Handler) gateway.Handler {
	return func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
		mode, err := s.cutMode(call)
		if err != nil {
			return nil, err
		}
		d, ok := policy.DecisionFrom(ctx)
		if !ok || !d.NeedsApproval || redeems(ctx, call) {
			return next(ctx, call)
		}
		if mode == ModeAsync && !call.IsNotification() {
			return nil, s.holdAsync(ctx, call, d)
		}
		rec, byDeadline, err := s.hold(ctx, call, d)
		if err != nil {
			return nil, err
		}
		if err := s.wait(ctx, rec, byDeadline); err != nil {
			return nil, err
		}
		return next(ctx, call)
	}
}

// hold records call as a pending approval of a waiting caller, expiring after
// approvals.max_wait or at the call's deadline, whichever comes first; byDeadline says the
// deadline did.
func (s *stage) hold(ctx context.Context, call *gateway.Call, d policy.Decision) (rec Record, byDeadline bool, err error) {
	wait := s.cfg.MaxWait
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
		wait, byDeadline = time.Until(dl), true
	}
	rec, err = s.create(ctx, call, d, ModeWait, wait)
	return rec, byDeadline, err
}

// create records call as a pending approval in mode, expiring after wait.
func (s *stage) create(ctx context.Context, call *gateway.Call, d policy.Decision, mode string, wait time.Duration) (Record, error) {
	digest, err := Digest(call.Method, call.Params)
	if err != nil {
		return Record{}, gateway.NewError(schemas.CodeInternal).Wrap(err)
	}
	now := s.now()
	rec := Record{
		ID: newID(), Digest: digest, Method: call.Method, Caller: callerOf(call.Principal),
		Zone: call.Zone.String(), Rule: d.Rule, Mutation: string(d.Mutation), Mode: mode,
		Created: now, Expires: now.Add(wait), Status: Pending,
	}
	retry, err := s.store.Create(ctx, rec, s.cfg.MaxPending)
	switch {
	case errors.Is(err, ErrFull):
		return Record{}, gateway.Errorf(schemas.CodeOverloaded, "Too many approvals pending").
			With("reason", "max_pending").With("max_pending", s.cfg.MaxPending).With("retry_after_ms", max(retry.Milliseconds(), 1))
	case err != nil:
		return Record{}, gateway.AsError(err)
	}
	s.log.InfoContext(ctx, "call held for approval", "approval_id", rec.ID, "mode", mode, "method", rec.Method, "digest", rec.Digest,
		"rule", rec.Rule, "mutation", rec.Mutation, "caller", rec.Caller, "expires", rec.Expires, "trace_id", call.TraceID)
	return rec, nil
}

// wait polls rec until it is decided; nil means approved. byDeadline says the call's
// deadline set rec's expiry: then the deadline, not the poll, ends the wait, so the caller
// gets DEADLINE_EXCEEDED as for any call that runs out of time.
func (s *stage) wait(ctx context.Context, rec Record, byDeadline bool) error {
	tick := time.NewTicker(s.cfg.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return s.abandon(ctx, rec)
		case <-tick.C:
		}
		cur, ok, err := s.store.Get(ctx, rec.ID)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				s.log.WarnContext(ctx, "reading a pending approval", "approval_id", rec.ID, "err", err)
			}
			continue
		case !ok: // gone without a decision: the store lost it, so it cannot be approved
			return decisionError(Expired, rec.ID)
		case cur.Status == Pending && (byDeadline || s.now().Before(cur.Expires)):
			continue
		case cur.Status == Pending:
			if cur, err = s.store.Decide(ctx, rec.ID, Expired, System, "timeout"); err != nil && !isDecided(err) {
				return gateway.AsError(err)
			}
		}
		return s.outcome(ctx, cur)
	}
}

// outcome turns a decided record into the call's fate, and forgets the record.
func (s *stage) outcome(ctx context.Context, rec Record) error {
	if err := s.store.Forget(ctx, rec.ID); err != nil {
		s.log.WarnContext(ctx, "forgetting a decided approval", "approval_id", rec.ID, "err", err)
	}
	if rec.Status == Approved {
		return nil
	}
	return decisionError(rec.Status, rec.ID)
}

// abandon decides rec withdrawn (the caller went away) or expired (its deadline passed) and
// returns the context's error, which the face maps as for any call.
func (s *stage) abandon(ctx context.Context, rec Record) error {
	status, note := Withdrawn, "caller went away"
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		status, note = Expired, "call deadline"
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	cur, err := s.store.Decide(cctx, rec.ID, status, System, note)
	switch {
	case isDecided(err) && cur.Status == Approved:
		s.log.WarnContext(ctx, "an approved call's caller went away before it ran", "approval_id", rec.ID, "method", rec.Method)
	case err != nil && !isDecided(err):
		s.log.ErrorContext(ctx, "recording an abandoned approval", "approval_id", rec.ID, "err", err)
	}
	if err := s.store.Forget(cctx, rec.ID); err != nil {
		s.log.WarnContext(ctx, "forgetting an abandoned approval", "approval_id", rec.ID, "err", err)
	}
	return ctx.Err()
}

// isDecided reports whether err says the approval was decided already.
func isDecided(err error) bool {
	_, ok := errors.AsType[*DecidedError](err)
	return ok
}

// decisionError is the caller's error for an approval decided other than approved.
func decisionError(status Status, id string) *gateway.Error {
	msg := "Approval denied"
	if status != Denied {
		msg = "Approval expired"
	}
	return gateway.Errorf(schemas.CodeApprovalDenied, "%s", msg).With("approval", string(status)).With("approval_id", id)
}

// Digest is the hex SHA-256 of the canonical JSON of {"method": method, "params":
// params} (params null when absent), so the same call digests alike whatever its key order
// or whitespace.
func Digest(method string, params []byte) (string, error) {
	if len(params) == 0 {
		params = []byte("null")
	}
	obj, err := json.Marshal(struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}{method, params})
	if err != nil {
		return "", err
	}
	c, err := canonjson.CanonicalJSON(obj)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}
