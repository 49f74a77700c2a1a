package resilience

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"time"

	"github.com/gatehouse-dev/gatehouse/state"
)

// recordState is where the call an idempotency record stands for is.
type recordState byte

// Record states, as stored.
const (
	// recordPending: the call is running; its owner holds the record.
	recordPending recordState = 'p'
	// recordDone: the call succeeded; the record keeps its result.
	recordDone recordState = 'd'
	// recordUnkept: the call succeeded, but its result (or stream) was not kept.
	recordUnkept recordState = 'u'
)

// Layout of an encoded record: version, state, params digest, then by state the owner
// token (pending), the result JSON (done) or the result's size (unkept).
const (
	recordVersion   = 1
	recordHeader    = 2 + sha256.Size
	ownerBytes      = 16
	pendingLen      = recordHeader + ownerBytes
	unkeptLen       = recordHeader + 8
	recordKeyPrefix = "idempotency/"
)

// idemRecord is one idempotency record.
type idemRecord struct {
	state  recordState
	digest [sha256.Size]byte
	owner  [ownerBytes]byte // pending
	result []byte           // done: the result's JSON
	size   uint64           // unkept: the result's size in bytes, 0 for a stream
}

// encode returns the record's stored form.
func (r *idemRecord) encode() []byte {
	n := pendingLen
	switch r.state {
	case recordDone:
		n = recordHeader + len(r.result)
	case recordUnkept:
		n = unkeptLen
	}
	b := make([]byte, recordHeader, n)
	b[0], b[1] = recordVersion, byte(r.state)
	copy(b[2:], r.digest[:])
	switch r.state {
	case recordDone:
		b = append(b, r.result...)
	case recordUnkept:
		b = binary.BigEndian.AppendUint64(b, r.size)
	default:
		b = append(b, r.owner[:]...)
	}
	return b
}

// errBadRecord is returned for stored bytes that are not a record this version wrote.
var errBadRecord = errors.New("idempotency: not a valid record")

// decodeRecord reads a stored record. The result of a done record aliases b.
func decodeRecord(b []byte) (idemRecord, error) {
	if len(b) < recordHeader || b[0] != recordVersion {
		return idemRecord{}, errBadRecord
	}
	r := idemRecord{state: recordState(b[1])}
	copy(r.digest[:], b[2:recordHeader])
	body := b[recordHeader:]
	switch {
	case r.state == recordPending && len(body) == ownerBytes:
		copy(r.owner[:], body)
	case r.state == recordDone && len(body) > 0:
		r.result = body
	case r.state == recordUnkept && len(body) == 8:
		r.size = binary.BigEndian.Uint64(body)
	default:
		return idemRecord{}, errBadRecord
	}
	return r, nil
}

// recordKey returns the state key of the record of key, as sent by identity to method.
// The parts are length-prefixed before hashing, so no two triples share a key.
func recordKey(identity, method, key string) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, part := range [...]string{identity, method, key} {
		_, _ = h.Write(n[:binary.PutUvarint(n[:], uint64(len(part)))])
		_, _ = h.Write([]byte(part))
	}
	return recordKeyPrefix + hex.EncodeToString(h.Sum(nil))
}

// IdempotencyRecords keeps the idempotency stage's records: the per-kind state interface
// (DESIGN.md "State") of idempotency. kvRecords implements it over any state.KV (embedded
// or Redis), so replicas sharing a store share records. Every method is safe for
// concurrent use by every replica.
type IdempotencyRecords interface {
	// Claim stores rec (pending) under key, with ttl, unless a record is there; claimed
	// says it did. When it did not, cur is the record found, ok false when it vanished
	// between the two steps (the caller claims again).
	Claim(ctx context.Context, key string, rec []byte, ttl time.Duration) (cur []byte, ok, claimed bool, err error)
	// Finish replaces the pending record rec under key with final, with ttl; replaced is
	// false when rec was no longer there (its lock expired).
	Finish(ctx context.Context, key string, rec, final []byte, ttl time.Duration) (replaced bool, err error)
	// Release removes the pending record rec under key, if it is still there.
	Release(ctx context.Context, key string, rec []byte) error
}

// kvRecords is IdempotencyRecords over a state.KV: a pending record is an in-flight lock
// taken with SetNX; finishing and releasing it are compare-and-swaps against its exact
// bytes (which hold a random owner token), so only its owner can.
type kvRecords struct{ kv state.KV }

var _ IdempotencyRecords = kvRecords{}

// NewKVIdempotencyRecords returns idempotency records kept in kv.
func NewKVIdempotencyRecords(kv state.KV) IdempotencyRecords { return kvRecords{kv: kv} }

func (s kvRecords) Claim(ctx context.Context, key string, rec []byte, ttl time.Duration) ([]byte, bool, bool, error) {
	claimed, err := s.kv.SetNX(ctx, key, rec, ttl)
	if err != nil || claimed {
		return nil, false, claimed, err
	}
	cur, ok, err := s.kv.Get(ctx, key)
	return cur, ok, false, err
}

func (s kvRecords) Finish(ctx context.Context, key string, rec, final []byte, ttl time.Duration) (bool, error) {
	return s.kv.CompareAndSwap(ctx, key, rec, final, ttl)
}

func (s kvRecords) Release(ctx context.Context, key string, rec []byte) error {
	if _, err := s.kv.CompareAndSwap(ctx, key, rec, nil, time.Second); err != nil {
		return fmt.Errorf("releasing an idempotency lock: %w", err)
	}
	return nil
}
