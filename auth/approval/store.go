package approval

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/gatehouse-dev/gatehouse/state"
)

// Status is where an approval stands. Every approval starts pending and leaves it
// once, for one of the four decisions.
type Status string

// Approval statuses.
const (
	Pending   Status = "pending"
	Approved  Status = "approved"
	Denied    Status = "denied"
	Expired   Status = "expired"
	Withdrawn Status = "withdrawn"
)

// System is who decides when no operator did (expiry, withdrawal).
const System = "gatehouse"

// Record is one held call. While pending it lives under its id; once decided, the
// same record, with the decision filled in, is its audit record.
type Record struct {
	ID       string `json:"id"`
	Digest   string `json:"digest"` // hex SHA-256 of canonical {method, params}
	Method   string `json:"method"`
	Caller   string `json:"caller"` // the caller's subject
	Zone     string `json:"zone"`
	Rule     string `json:"rule"`
	Mutation string `json:"mutation"`
	// Mode is ModeWait (the caller waits for the decision) or ModeAsync (it redeems the
	// approval_id later: approvals.redeem).
	Mode    string    `json:"mode,omitempty"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
	Status  Status    `json:"status"`
	// DecidedBy is the subject of the operator who approved or denied, System for
	// an expiry or a withdrawal.
	DecidedBy string    `json:"decided_by,omitempty"`
	DecidedAt time.Time `json:"decided_at,omitzero"`
	// Note is the approver's note, the denier's reason, or why the system decided.
	Note string `json:"note,omitempty"`
	// RedeemedAt is when an approved asynchronous call was redeemed and ran.
	RedeemedAt time.Time `json:"redeemed_at,omitzero"`
}

// Errors of a Store.
var (
	// ErrUnknown: no approval, pending or decided, has this id.
	ErrUnknown = errors.New("approvals: unknown id")
	// ErrFull: max_pending approvals are pending.
	ErrFull = errors.New("approvals: too many pending")
)

// DecidedError is returned when an approval that is no longer pending is decided.
type DecidedError struct{ Status Status }

// Error implements error.
func (e *DecidedError) Error() string {
	return fmt.Sprintf("approvals: already %s", e.Status)
}

// Store keeps pending approvals and their audit records. Every method is safe for
// concurrent use by every replica sharing the store.
type Store interface {
	// Create stores rec as pending unless max approvals are pending (ErrFull,
	// with retryAfter the time until the first of them expires).
	Create(ctx context.Context, rec Record, maxPending int) (retryAfter time.Duration, err error)
	// Get returns the approval under id while it is pending or just decided.
	Get(ctx context.Context, id string) (Record, bool, error)
	// Decide moves a pending approval to status (not Pending), logs the decision and
	// keeps its audit record, and returns the decided record. Exactly one of concurrent
	// decisions on one id wins; the others get *DecidedError. An approval whose
	// time is up is decided expired, whatever was asked: the caller compares the status.
	Decide(ctx context.Context, id string, status Status, by, note string) (Record, error)
	// Forget removes a decided approval once its waiter has read the decision.
	Forget(ctx context.Context, id string) error
	// Pending lists the pending approvals, oldest first.
	Pending(ctx context.Context) ([]Record, error)
	// Decided lists the audit records still kept, newest first.
	Decided(ctx context.Context) ([]Record, error)
	// Redeems keeps what asynchronous approvals need for their redeem.
	Redeems
}

// Redeems keeps an asynchronous approval's call, the claim of the redeem that runs it, and
// its outcome. Every method is safe for concurrent use by every replica sharing the store.
type Redeems interface {
	// Lookup returns the approval under id, pending or decided (its audit record).
	Lookup(ctx context.Context, id string) (Record, bool, error)
	// KeepCall keeps the params of an asynchronous approval's call for ttl, for its redeem.
	KeepCall(ctx context.Context, id string, params []byte, ttl time.Duration) error
	// Call returns the params KeepCall kept (nil for a call without params).
	Call(ctx context.Context, id string) (params []byte, ok bool, err error)
	// Claim makes this redeem the one that runs the approved call id: exactly one of all
	// the claims on id, across replicas, succeeds while its claim lives (ttl). until is
	// when the claiming redeem's own deadline passes.
	Claim(ctx context.Context, id string, until time.Time, ttl time.Duration) (claimed bool, err error)
	// Claimed returns until of the claim on id, if any.
	Claimed(ctx context.Context, id string) (until time.Time, ok bool, err error)
	// Release drops the claim on id, so the call can be redeemed again (it did not run).
	Release(ctx context.Context, id string) error
	// KeepOutcome keeps the outcome of a redeemed call for ttl and records the redeem in
	// the approval's audit record.
	KeepOutcome(ctx context.Context, rec Record, out Outcome, ttl time.Duration) error
	// Outcome returns the outcome KeepOutcome kept.
	Outcome(ctx context.Context, id string) (Outcome, bool, error)
}

// Keys and bounds of kvStore.
const (
	pendingPrefix   = "approvals/p/"
	auditPrefix     = "approvals/a/"
	pendingIndexKey = "approvals/index"
	auditIndexKey   = "approvals/audit-index"
	// auditListMax bounds the audit records the audit index (and so the list
	// method) names; older ones stay readable in the store until audit_ttl.
	auditListMax = 1000
	// casAttempts bounds the compare-and-swap retries on one index update.
	casAttempts = 64
	// decidedGrace is how long a decided approval stays under its id, for its
	// waiter (on any replica) to read the decision.
	decidedGrace = time.Minute
)

// kvStore is the Store over the state store's KV, so it works unchanged on any
// backend (embedded or Redis). The KV cannot list keys, so two index entries name the
// pending approvals and the recent audit records; they are updated by compare-and-swap.
type kvStore struct {
	kv       state.KV
	now      func() time.Time
	log      *slog.Logger
	auditTTL time.Duration
}

var _ Store = (*kvStore)(nil)

// indexEntry names one approval in an index: its id and a time (pending: its expiry;
// audit: its decision), in Unix milliseconds.
type indexEntry struct {
	ID string `json:"i"`
	At int64  `json:"t"`
}

// newID returns a fresh random approval id.
func newID() string { return rand.Text() }

func (s *kvStore) Create(ctx context.Context, rec Record, maxPending int) (time.Duration, error) {
	now := s.now()
	ttl := rec.Expires.Sub(now) + decidedGrace
	var retry time.Duration
	var expired []string
	err := s.update(ctx, pendingIndexKey, func(idx []indexEntry) ([]indexEntry, error) {
		expired = expired[:0]
		idx = slices.DeleteFunc(idx, func(e indexEntry) bool {
			if e.At <= now.UnixMilli() {
				expired = append(expired, e.ID)
				return true
			}
			return false
		})
		if len(idx) >= maxPending {
			retry = time.Duration(slices.MinFunc(idx, func(a, b indexEntry) int { return int(a.At - b.At) }).At-now.UnixMilli()) * time.Millisecond
			return nil, ErrFull
		}
		return append(idx, indexEntry{ID: rec.ID, At: rec.Expires.UnixMilli()}), nil
	})
	if len(expired) > 0 && (err == nil || errors.Is(err, ErrFull)) {
		s.expireAsync(ctx, expired)
	}
	if err != nil {
		return retry, err
	}
	if err := s.put(ctx, pendingPrefix+rec.ID, rec, ttl); err != nil {
		s.unindex(ctx, pendingIndexKey, rec.ID)
		return 0, err
	}
	return 0, nil
}

func (s *kvStore) Get(ctx context.Context, id string) (Record, bool, error) {
	return s.read(ctx, pendingPrefix+id)
}

func (s *kvStore) Decide(ctx context.Context, id string, status Status, by, note string) (Record, error) {
	key := pendingPrefix + id
	for range casAttempts {
		old, ok, err := s.kv.Get(ctx, key)
		if err != nil {
			return Record{}, fmt.Errorf("reading approval: %w", err)
		}
		if !ok {
			return s.decidedBefore(ctx, id)
		}
		var rec Record
		if err := json.Unmarshal(old, &rec); err != nil {
			return Record{}, fmt.Errorf("decoding approval: %w", err)
		}
		if rec.Status != Pending {
			return rec, &DecidedError{Status: rec.Status}
		}
		now := s.now()
		if !now.Before(rec.Expires) && (status == Approved || status == Denied) {
			status, by, note = Expired, System, "timeout"
		}
		rec.Status, rec.DecidedBy, rec.DecidedAt, rec.Note = status, by, now, note
		val, err := json.Marshal(rec)
		if err != nil {
			return Record{}, fmt.Errorf("encoding approval: %w", err)
		}
		swapped, err := s.kv.CompareAndSwap(ctx, key, old, val, decidedGrace)
		if err != nil {
			return Record{}, fmt.Errorf("deciding approval: %w", err)
		}
		if swapped {
			s.audit(ctx, rec)
			return rec, nil
		}
	}
	return Record{}, errors.New("approvals: the record changed too often to decide")
}

// decidedBefore answers decide for an id with no live record: decided (its audit record
// says how) or unknown.
func (s *kvStore) decidedBefore(ctx context.Context, id string) (Record, error) {
	rec, ok, err := s.read(ctx, auditPrefix+id)
	switch {
	case err != nil:
		return Record{}, err
	case !ok:
		return Record{}, ErrUnknown
	default:
		return rec, &DecidedError{Status: rec.Status}
	}
}

// audit logs a decision, keeps its audit record and takes it off the pending index. The
// decision stands whatever fails here; failures are logged.
func (s *kvStore) audit(ctx context.Context, rec Record) {
	s.log.Info("approval decided", "approval_id", rec.ID, "status", string(rec.Status), "by", rec.DecidedBy,
		"at", rec.DecidedAt, "method", rec.Method, "digest", rec.Digest, "rule", rec.Rule, "mutation", rec.Mutation,
		"caller", rec.Caller, "zone", rec.Zone, "note", rec.Note)
	if err := s.put(ctx, auditPrefix+rec.ID, rec, s.auditTTL); err != nil {
		s.log.Error("keeping an approval's audit record", "approval_id", rec.ID, "err", err)
	}
	at := rec.DecidedAt.UnixMilli()
	oldest := s.now().Add(-s.auditTTL).UnixMilli()
	err := s.update(ctx, auditIndexKey, func(idx []indexEntry) ([]indexEntry, error) {
		idx = slices.DeleteFunc(idx, func(e indexEntry) bool { return e.At <= oldest })
		idx = append(idx, indexEntry{ID: rec.ID, At: at})
		if len(idx) > auditListMax {
			idx = idx[len(idx)-auditListMax:]
		}
		return idx, nil
	})
	if err != nil {
		s.log.Error("indexing an approval's audit record", "approval_id", rec.ID, "err", err)
	}
	s.unindex(ctx, pendingIndexKey, rec.ID)
}

func (s *kvStore) Forget(ctx context.Context, id string) error {
	_, err := s.kv.Delete(ctx, pendingPrefix+id)
	return err
}

func (s *kvStore) Pending(ctx context.Context) ([]Record, error) {
	recs, err := s.list(ctx, pendingIndexKey, pendingPrefix)
	var expired []string
	now := s.now()
	recs = slices.DeleteFunc(recs, func(r Record) bool {
		if r.Status == Pending && r.Mode == ModeAsync && !now.Before(r.Expires) {
			expired = append(expired, r.ID)
			return true
		}
		return r.Status != Pending
	})
	if len(expired) > 0 {
		s.expireAsync(ctx, expired)
	}
	return recs, err
}

func (s *kvStore) Decided(ctx context.Context) ([]Record, error) {
	recs, err := s.list(ctx, auditIndexKey, auditPrefix)
	slices.Reverse(recs)
	return recs, err
}

// list reads the records an index names, in index order, skipping those gone.
func (s *kvStore) list(ctx context.Context, indexKey, prefix string) ([]Record, error) {
	idx, _, err := s.index(ctx, indexKey)
	if err != nil {
		return nil, err
	}
	recs := make([]Record, 0, len(idx))
	for _, e := range idx {
		rec, ok, err := s.read(ctx, prefix+e.ID)
		if err != nil {
			return nil, err
		}
		if ok {
			recs = append(recs, rec)
		}
	}
	return recs, nil
}

// unindex takes id off the index under key; a failure is logged (the entry expires anyway).
func (s *kvStore) unindex(ctx context.Context, key, id string) {
	err := s.update(ctx, key, func(idx []indexEntry) ([]indexEntry, error) {
		return slices.DeleteFunc(idx, func(e indexEntry) bool { return e.ID == id }), nil
	})
	if err != nil {
		s.log.Warn("removing an approval from the index", "approval_id", id, "err", err)
	}
}

// update replaces the index under key with edit's result by compare-and-swap, retrying on
// a concurrent change. Each write sets the index's TTL to the longest an entry needs: the
// audit TTL for the audit index; for the pending index, until its last expiry plus the
// grace a decision is kept.
func (s *kvStore) update(ctx context.Context, key string, edit func([]indexEntry) ([]indexEntry, error)) error {
	for range casAttempts {
		idx, old, err := s.index(ctx, key)
		if err != nil {
			return err
		}
		idx, err = edit(idx)
		if err != nil {
			return err
		}
		val, err := json.Marshal(idx)
		if err != nil {
			return fmt.Errorf("encoding approval index: %w", err)
		}
		ok, err := s.kv.CompareAndSwap(ctx, key, old, val, s.indexTTL(key, idx))
		if err != nil {
			return fmt.Errorf("updating approval index: %w", err)
		}
		if ok {
			return nil
		}
	}
	return errors.New("approvals: the index changed too often to update")
}

// indexTTL is the lifetime of the index under key holding idx.
func (s *kvStore) indexTTL(key string, idx []indexEntry) time.Duration {
	if key == auditIndexKey {
		return s.auditTTL
	}
	last := s.now().UnixMilli()
	for _, e := range idx {
		last = max(last, e.At)
	}
	return time.Duration(last-s.now().UnixMilli())*time.Millisecond + decidedGrace
}

// index reads the index under key and its raw value (nil when absent).
func (s *kvStore) index(ctx context.Context, key string) ([]indexEntry, []byte, error) {
	raw, ok, err := s.kv.Get(ctx, key)
	if err != nil || !ok {
		return nil, nil, err
	}
	var idx []indexEntry
	if err := json.Unmarshal(raw, &idx); err != nil {
		return nil, nil, fmt.Errorf("decoding approval index: %w", err)
	}
	return idx, raw, nil
}

func (s *kvStore) read(ctx context.Context, key string) (Record, bool, error) {
	raw, ok, err := s.kv.Get(ctx, key)
	if err != nil || !ok {
		return Record{}, false, err
	}
	var rec Record
	if err := json.Unmarshal(raw, &rec); err != nil {
		return Record{}, false, fmt.Errorf("decoding approval: %w", err)
	}
	return rec, true, nil
}

func (s *kvStore) put(ctx context.Context, key string, rec Record, ttl time.Duration) error {
	val, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encoding approval: %w", err)
	}
	return s.kv.Set(ctx, key, val, ttl)
}
