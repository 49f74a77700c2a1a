package server

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

// approvalStatus is where an approval stands. Every approval starts pending and leaves it
// once, for one of the four decisions.
type approvalStatus string

// Approval statuses.
const (
	approvalPending   approvalStatus = "pending"
	approvalApproved  approvalStatus = "approved"
	approvalDenied    approvalStatus = "denied"
	approvalExpired   approvalStatus = "expired"
	approvalWithdrawn approvalStatus = "withdrawn"
)

// approvalSystem is who decides when no operator did (expiry, withdrawal).
const approvalSystem = "gatehouse"

// approvalRecord is one held call. While pending it lives under its id; once decided, the
// same record, with the decision filled in, is its audit record.
type approvalRecord struct {
	ID       string         `json:"id"`
	Digest   string         `json:"digest"` // hex SHA-256 of canonical {method, params}
	Method   string         `json:"method"`
	Caller   string         `json:"caller"` // the caller's subject
	Zone     string         `json:"zone"`
	Rule     string         `json:"rule"`
	Mutation string         `json:"mutation"`
	Created  time.Time      `json:"created"`
	Expires  time.Time      `json:"expires"`
	Status   approvalStatus `json:"status"`
	// DecidedBy is the subject of the operator who approved or denied, approvalSystem for
	// an expiry or a withdrawal.
	DecidedBy string    `json:"decided_by,omitempty"`
	DecidedAt time.Time `json:"decided_at,omitzero"`
	// Note is the approver's note, the denier's reason, or why the system decided.
	Note string `json:"note,omitempty"`
}

// Errors of an approvalStore.
var (
	// errApprovalUnknown: no approval, pending or decided, has this id.
	errApprovalUnknown = errors.New("approvals: unknown id")
	// errApprovalsFull: max_pending approvals are pending.
	errApprovalsFull = errors.New("approvals: too many pending")
)

// approvalDecidedError is returned when an approval that is no longer pending is decided.
type approvalDecidedError struct{ Status approvalStatus }

func (e *approvalDecidedError) Error() string {
	return fmt.Sprintf("approvals: already %s", e.Status)
}

// approvalStore keeps pending approvals and their audit records. Every method is safe for
// concurrent use by every replica sharing the store.
type approvalStore interface {
	// create stores rec as pending unless max approvals are pending (errApprovalsFull,
	// with retryAfter the time until the first of them expires).
	create(ctx context.Context, rec approvalRecord, maxPending int) (retryAfter time.Duration, err error)
	// get returns the approval under id while it is pending or just decided.
	get(ctx context.Context, id string) (approvalRecord, bool, error)
	// decide moves a pending approval to status (not approvalPending), logs the decision and
	// keeps its audit record, and returns the decided record. Exactly one of concurrent
	// decisions on one id wins; the others get *approvalDecidedError. An approval whose
	// time is up is decided expired, whatever was asked: the caller compares the status.
	decide(ctx context.Context, id string, status approvalStatus, by, note string) (approvalRecord, error)
	// forget removes a decided approval once its waiter has read the decision.
	forget(ctx context.Context, id string) error
	// pending lists the pending approvals, oldest first.
	pending(ctx context.Context) ([]approvalRecord, error)
	// decided lists the audit records still kept, newest first.
	decided(ctx context.Context) ([]approvalRecord, error)
}

// Keys and bounds of kvApprovals.
const (
	approvalKeyPrefix   = "approvals/p/"
	approvalAuditPrefix = "approvals/a/"
	approvalIndexKey    = "approvals/index"
	approvalAuditIndex  = "approvals/audit-index"
	// approvalAuditListMax bounds the audit records the audit index (and so the list
	// method) names; older ones stay readable in the store until audit_ttl.
	approvalAuditListMax = 1000
	// approvalCASAttempts bounds the compare-and-swap retries on one index update.
	approvalCASAttempts = 64
	// approvalDecidedGrace is how long a decided approval stays under its id, for its
	// waiter (on any replica) to read the decision.
	approvalDecidedGrace = time.Minute
)

// kvApprovals is the approvalStore over the state store's KV, so it works unchanged on any
// backend (embedded or Redis). The KV cannot list keys, so two index entries name the
// pending approvals and the recent audit records; they are updated by compare-and-swap.
type kvApprovals struct {
	kv       state.KV
	now      func() time.Time
	log      *slog.Logger
	auditTTL time.Duration
}

var _ approvalStore = (*kvApprovals)(nil)

// indexEntry names one approval in an index: its id and a time (pending: its expiry;
// audit: its decision), in Unix milliseconds.
type indexEntry struct {
	ID string `json:"i"`
	At int64  `json:"t"`
}

// newApprovalID returns a fresh random approval id.
func newApprovalID() string { return rand.Text() }

func (s *kvApprovals) create(ctx context.Context, rec approvalRecord, maxPending int) (time.Duration, error) {
	now := s.now()
	ttl := rec.Expires.Sub(now) + approvalDecidedGrace
	var retry time.Duration
	err := s.update(ctx, approvalIndexKey, func(idx []indexEntry) ([]indexEntry, error) {
		idx = slices.DeleteFunc(idx, func(e indexEntry) bool { return e.At <= now.UnixMilli() })
		if len(idx) >= maxPending {
			retry = time.Duration(slices.MinFunc(idx, func(a, b indexEntry) int { return int(a.At - b.At) }).At-now.UnixMilli()) * time.Millisecond
			return nil, errApprovalsFull
		}
		return append(idx, indexEntry{ID: rec.ID, At: rec.Expires.UnixMilli()}), nil
	})
	if err != nil {
		return retry, err
	}
	if err := s.put(ctx, approvalKeyPrefix+rec.ID, rec, ttl); err != nil {
		s.unindex(ctx, approvalIndexKey, rec.ID)
		return 0, err
	}
	return 0, nil
}

func (s *kvApprovals) get(ctx context.Context, id string) (approvalRecord, bool, error) {
	return s.read(ctx, approvalKeyPrefix+id)
}

func (s *kvApprovals) decide(ctx context.Context, id string, status approvalStatus, by, note string) (approvalRecord, error) {
	key := approvalKeyPrefix + id
	for range approvalCASAttempts {
		old, ok, err := s.kv.Get(ctx, key)
		if err != nil {
			return approvalRecord{}, fmt.Errorf("reading approval: %w", err)
		}
		if !ok {
			return s.decidedBefore(ctx, id)
		}
		var rec approvalRecord
		if err := json.Unmarshal(old, &rec); err != nil {
			return approvalRecord{}, fmt.Errorf("decoding approval: %w", err)
		}
		if rec.Status != approvalPending {
			return rec, &approvalDecidedError{Status: rec.Status}
		}
		now := s.now()
		if !now.Before(rec.Expires) && (status == approvalApproved || status == approvalDenied) {
			status, by, note = approvalExpired, approvalSystem, "timeout"
		}
		rec.Status, rec.DecidedBy, rec.DecidedAt, rec.Note = status, by, now, note
		val, err := json.Marshal(rec)
		if err != nil {
			return approvalRecord{}, fmt.Errorf("encoding approval: %w", err)
		}
		swapped, err := s.kv.CompareAndSwap(ctx, key, old, val, approvalDecidedGrace)
		if err != nil {
			return approvalRecord{}, fmt.Errorf("deciding approval: %w", err)
		}
		if swapped {
			s.audit(ctx, rec)
			return rec, nil
		}
	}
	return approvalRecord{}, errors.New("approvals: the record changed too often to decide")
}

// decidedBefore answers decide for an id with no live record: decided (its audit record
// says how) or unknown.
func (s *kvApprovals) decidedBefore(ctx context.Context, id string) (approvalRecord, error) {
	rec, ok, err := s.read(ctx, approvalAuditPrefix+id)
	switch {
	case err != nil:
		return approvalRecord{}, err
	case !ok:
		return approvalRecord{}, errApprovalUnknown
	default:
		return rec, &approvalDecidedError{Status: rec.Status}
	}
}

// audit logs a decision, keeps its audit record and takes it off the pending index. The
// decision stands whatever fails here; failures are logged.
func (s *kvApprovals) audit(ctx context.Context, rec approvalRecord) {
	s.log.Info("approval decided", "approval_id", rec.ID, "status", string(rec.Status), "by", rec.DecidedBy,
		"at", rec.DecidedAt, "method", rec.Method, "digest", rec.Digest, "rule", rec.Rule, "mutation", rec.Mutation,
		"caller", rec.Caller, "zone", rec.Zone, "note", rec.Note)
	if err := s.put(ctx, approvalAuditPrefix+rec.ID, rec, s.auditTTL); err != nil {
		s.log.Error("keeping an approval's audit record", "approval_id", rec.ID, "err", err)
	}
	at := rec.DecidedAt.UnixMilli()
	oldest := s.now().Add(-s.auditTTL).UnixMilli()
	err := s.update(ctx, approvalAuditIndex, func(idx []indexEntry) ([]indexEntry, error) {
		idx = slices.DeleteFunc(idx, func(e indexEntry) bool { return e.At <= oldest })
		idx = append(idx, indexEntry{ID: rec.ID, At: at})
		if len(idx) > approvalAuditListMax {
			idx = idx[len(idx)-approvalAuditListMax:]
		}
		return idx, nil
	})
	if err != nil {
		s.log.Error("indexing an approval's audit record", "approval_id", rec.ID, "err", err)
	}
	s.unindex(ctx, approvalIndexKey, rec.ID)
}

func (s *kvApprovals) forget(ctx context.Context, id string) error {
	_, err := s.kv.Delete(ctx, approvalKeyPrefix+id)
	return err
}

func (s *kvApprovals) pending(ctx context.Context) ([]approvalRecord, error) {
	recs, err := s.list(ctx, approvalIndexKey, approvalKeyPrefix)
	recs = slices.DeleteFunc(recs, func(r approvalRecord) bool { return r.Status != approvalPending })
	return recs, err
}

func (s *kvApprovals) decided(ctx context.Context) ([]approvalRecord, error) {
	recs, err := s.list(ctx, approvalAuditIndex, approvalAuditPrefix)
	slices.Reverse(recs)
	return recs, err
}

// list reads the records an index names, in index order, skipping those gone.
func (s *kvApprovals) list(ctx context.Context, indexKey, prefix string) ([]approvalRecord, error) {
	idx, _, err := s.index(ctx, indexKey)
	if err != nil {
		return nil, err
	}
	recs := make([]approvalRecord, 0, len(idx))
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
func (s *kvApprovals) unindex(ctx context.Context, key, id string) {
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
func (s *kvApprovals) update(ctx context.Context, key string, edit func([]indexEntry) ([]indexEntry, error)) error {
	for range approvalCASAttempts {
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
func (s *kvApprovals) indexTTL(key string, idx []indexEntry) time.Duration {
	if key == approvalAuditIndex {
		return s.auditTTL
	}
	last := s.now().UnixMilli()
	for _, e := range idx {
		last = max(last, e.At)
	}
	return time.Duration(last-s.now().UnixMilli())*time.Millisecond + approvalDecidedGrace
}

// index reads the index under key and its raw value (nil when absent).
func (s *kvApprovals) index(ctx context.Context, key string) ([]indexEntry, []byte, error) {
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

func (s *kvApprovals) read(ctx context.Context, key string) (approvalRecord, bool, error) {
	raw, ok, err := s.kv.Get(ctx, key)
	if err != nil || !ok {
		return approvalRecord{}, false, err
	}
	var rec approvalRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return approvalRecord{}, false, fmt.Errorf("decoding approval: %w", err)
	}
	return rec, true, nil
}

func (s *kvApprovals) put(ctx context.Context, key string, rec approvalRecord, ttl time.Duration) error {
	val, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encoding approval: %w", err)
	}
	return s.kv.Set(ctx, key, val, ttl)
}
