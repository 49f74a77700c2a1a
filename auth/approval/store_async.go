package approval

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Keys of what an asynchronous approval keeps besides its record.
const (
	callPrefix    = "approvals/c/" // the held call's params, for its redeem
	claimPrefix   = "approvals/x/" // the claim of the redeem that runs the call
	outcomePrefix = "approvals/o/" // the outcome of the redeemed call
	// sweepMax bounds the expired asynchronous approvals one Create or Pending decides
	// expired, so that neither does unbounded work.
	sweepMax = 16
)

// Outcome is what a redeemed call answered: its result's JSON, or its error.
type Outcome struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *OutcomeError   `json:"error,omitempty"`
	// Unkept says the result was a stream, delivered to the first redeem only.
	Unkept bool `json:"unkept,omitempty"`
}

// OutcomeError is the error of a redeemed call, as its caller saw it.
type OutcomeError struct {
	Code    schemas.Code   `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data,omitempty"`
}

// storedCall is what KeepCall stores.
type storedCall struct {
	Params json.RawMessage `json:"params,omitempty"`
}

func (s *kvStore) Lookup(ctx context.Context, id string) (Record, bool, error) {
	rec, ok, err := s.read(ctx, pendingPrefix+id)
	if err != nil || ok {
		return rec, ok, err
	}
	return s.read(ctx, auditPrefix+id)
}

func (s *kvStore) KeepCall(ctx context.Context, id string, params []byte, ttl time.Duration) error {
	val, err := json.Marshal(storedCall{Params: params})
	if err != nil {
		return fmt.Errorf("encoding a held call: %w", err)
	}
	return s.kv.Set(ctx, callPrefix+id, val, ttl)
}

func (s *kvStore) Call(ctx context.Context, id string) ([]byte, bool, error) {
	raw, ok, err := s.kv.Get(ctx, callPrefix+id)
	if err != nil || !ok {
		return nil, false, err
	}
	var c storedCall
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, false, fmt.Errorf("decoding a held call: %w", err)
	}
	return c.Params, true, nil
}

func (s *kvStore) Claim(ctx context.Context, id string, until time.Time, ttl time.Duration) (bool, error) {
	return s.kv.SetNX(ctx, claimPrefix+id, strconv.AppendInt(nil, until.UnixMilli(), 10), ttl)
}

func (s *kvStore) Claimed(ctx context.Context, id string) (time.Time, bool, error) {
	raw, ok, err := s.kv.Get(ctx, claimPrefix+id)
	if err != nil || !ok {
		return time.Time{}, false, err
	}
	ms, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("decoding a redeem claim: %w", err)
	}
	return time.UnixMilli(ms), true, nil
}

func (s *kvStore) Release(ctx context.Context, id string) error {
	_, err := s.kv.Delete(ctx, claimPrefix+id)
	return err
}

func (s *kvStore) KeepOutcome(ctx context.Context, rec Record, out Outcome, ttl time.Duration) error {
	val, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("encoding an outcome: %w", err)
	}
	if err := s.kv.Set(ctx, outcomePrefix+rec.ID, val, ttl); err != nil {
		return err
	}
	rec.RedeemedAt = s.now()
	s.log.Info("approval redeemed", "approval_id", rec.ID, "method", rec.Method, "digest", rec.Digest,
		"caller", rec.Caller, "decided_by", rec.DecidedBy, "at", rec.RedeemedAt, "error", out.Error != nil)
	if err := s.put(ctx, auditPrefix+rec.ID, rec, s.auditTTL); err != nil {
		s.log.Error("recording an approval's redeem in its audit record", "approval_id", rec.ID, "err", err)
	}
	// The held call is no longer needed: the outcome answers every later redeem.
	if _, err := s.kv.Delete(ctx, callPrefix+rec.ID); err != nil {
		s.log.Warn("dropping a redeemed call", "approval_id", rec.ID, "err", err)
	}
	return nil
}

func (s *kvStore) Outcome(ctx context.Context, id string) (Outcome, bool, error) {
	raw, ok, err := s.kv.Get(ctx, outcomePrefix+id)
	if err != nil || !ok {
		return Outcome{}, false, err
	}
	var out Outcome
	if err := json.Unmarshal(raw, &out); err != nil {
		return Outcome{}, false, fmt.Errorf("decoding an outcome: %w", err)
	}
	return out, true, nil
}

// expireAsync decides expired the asynchronous approvals among ids whose time is up (at
// most sweepMax), so each gets its audit record though no caller comes back for it. Waiting
// calls are left to their waiters. Failures are logged.
func (s *kvStore) expireAsync(ctx context.Context, ids []string) {
	for _, id := range ids[:min(len(ids), sweepMax)] {
		rec, ok, err := s.read(ctx, pendingPrefix+id)
		if err != nil || !ok || rec.Mode != ModeAsync || rec.Status != Pending || s.now().Before(rec.Expires) {
			continue
		}
		if _, err := s.Decide(ctx, id, Expired, System, "timeout"); err != nil && !isDecided(err) {
			s.log.Warn("expiring an asynchronous approval", "approval_id", id, "err", err)
		}
	}
}
