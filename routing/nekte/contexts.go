package nekte

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
)

// Key prefixes of context envelopes.
const (
	prefixContext     = "nekte:ctx:"     // + owner + ":" + envelope id → storedEnvelope
	prefixTaskContext = "nekte:taskctx:" // + owner + ":" + task id → a task's inline persist: false envelope (local only)
)

// storedEnvelope is an envelope as kept: the envelope (its ttl_s the lifetime granted)
// and when it was stored and expires, in epoch milliseconds.
type storedEnvelope struct {
	Envelope  envelope `json:"envelope"`
	StoredAt  int64    `json:"stored_at"`
	ExpiresAt int64    `json:"expires_at"`
}

// envelopes is the state of context envelopes: shared per owner by nekte.context, and
// resolved for the tasks that carry them. contextStore implements it on state's
// KV (so the embedded store and Redis serve it alike) and, for persist: false, on a
// store local to the process.
type envelopes interface {
	handle(ctx context.Context, owner string, p *contextParams) (any, error)
	forDelegate(ctx context.Context, owner, capID string, e *envelope) (*taskContext, *storedEnvelope, error)
	keepLocal(ctx context.Context, owner, taskID string, se *storedEnvelope) error
	forTask(ctx context.Context, r *record) (*envelope, error)
}

var _ envelopes = (*contextStore)(nil)

// contextStore keeps context envelopes per owner: persist: true ones in the shared store,
// persist: false ones in a bounded store local to this process (state.Embedded), which
// never reaches durable storage and does not survive a restart. Entries outlive their expiry by contexts.expired_grace, so that a request for
// an expired envelope answers CONTEXT_EXPIRED rather than not_found.
//
// With peers (Service.UsePeers, several replicas sharing the store) a persist: false
// envelope stays in the memory of the replica that stored it, which also writes a locator
// to the shared store (peer.go); the other replicas reach the envelope through it.
type contextStore struct {
	durable state.KV
	local   state.KV
	cfg     ContextsConfig
	now     func() time.Time
	log     *slog.Logger
	// peers is set once by Service.UsePeers; nil: persist: false envelopes stay in this
	// process, as with one replica.
	peers atomic.Pointer[peering]
}

// slot is where one envelope may be kept: its key in the local store (and, for an
// envelope shared with nekte.context, in the durable one), the key of its locator, and
// how a peer names it.
type slot struct {
	id      string // the envelope id, for errors
	key     string
	locKey  string
	durable bool
	ref     PeerRef // without its secret
}

// sharedSlot is the slot of the owner's envelope id, shared with nekte.context.
func sharedSlot(owner, id string) slot {
	return slot{id: id, key: contextKey(owner, id), locKey: locatorKey(owner, id), durable: true,
		ref: PeerRef{Owner: owner, ID: id}}
}

// taskSlot is the slot of the inline persist: false envelope id of the owner's task
// taskID.
func taskSlot(owner, taskID, id string) slot {
	return slot{id: id, key: taskContextKey(owner, taskID), locKey: taskLocatorKey(owner, taskID),
		ref: PeerRef{Owner: owner, ID: taskID, Task: true}}
}

func contextKey(owner, id string) string { return prefixContext + ownerKey(owner) + ":" + id }

func taskContextKey(owner, taskID string) string {
	return prefixTaskContext + ownerKey(owner) + ":" + taskID
}

// lifetime returns the lifetime an envelope gets: its ttl_s, or the default, at most the
// maximum.
func (c *contextStore) lifetime(ttlSeconds int64) time.Duration {
	ttl := c.cfg.DefaultTTL
	if ttlSeconds > 0 && ttlSeconds <= int64(c.cfg.MaxTTL/time.Second) {
		ttl = time.Duration(ttlSeconds) * time.Second
	} else if ttlSeconds > 0 {
		ttl = c.cfg.MaxTTL
	}
	return ttl
}

// seal checks an envelope's size and stamps its lifetime from now.
func (c *contextStore) seal(e envelope, field string) (storedEnvelope, error) {
	if len(e.Data) > c.cfg.MaxDataBytes {
		return storedEnvelope{}, errTooLarge(field+".data", c.cfg.MaxDataBytes)
	}
	ttl := c.lifetime(e.TTLSeconds)
	now := nowMs(c.now())
	e.TTLSeconds = int64(ttl / time.Second)
	e.Data = compactJSON(e.Data)
	return storedEnvelope{Envelope: e, StoredAt: now, ExpiresAt: now + ttl.Milliseconds()}, nil
}

// share stores an envelope for its owner, replacing one of the same id wherever it was
// kept.
func (c *contextStore) share(ctx context.Context, owner string, e envelope) (nk.ContextResult, error) {
	se, err := c.seal(e, "envelope")
	if err != nil {
		return nk.ContextResult{}, err
	}
	sl := sharedSlot(owner, e.ID)
	if !e.Permissions.Persist {
		if err := c.keep(ctx, sl, &se); err != nil {
			return nk.ContextResult{}, err
		}
		if _, err := c.durable.Delete(ctx, sl.key); err != nil {
			return nk.ContextResult{}, gateway.AsError(err)
		}
		return nk.ContextResult{ID: e.ID, Status: nk.ContextStored, TTLSeconds: se.Envelope.TTLSeconds}, nil
	}
	raw, err := json.Marshal(se)
	if err != nil {
		return nk.ContextResult{}, gateway.NewError(schemas.CodeInternal).Wrap(err)
	}
	if err := c.durable.Set(ctx, sl.key, raw, c.keepFor(&se)); err != nil {
		return nk.ContextResult{}, gateway.AsError(err)
	}
	if _, err := c.local.Delete(ctx, sl.key); err != nil {
		return nk.ContextResult{}, gateway.AsError(err)
	}
	if c.peers.Load() != nil {
		if _, err := c.durable.Delete(ctx, sl.locKey); err != nil {
			return nk.ContextResult{}, gateway.AsError(err)
		}
	}
	return nk.ContextResult{ID: e.ID, Status: nk.ContextStored, TTLSeconds: se.Envelope.TTLSeconds}, nil
}

// keepFor is how long an envelope is kept: its lifetime and contexts.expired_grace.
func (c *contextStore) keepFor(se *storedEnvelope) time.Duration {
	return time.Duration(se.Envelope.TTLSeconds)*time.Second + c.cfg.ExpiredGrace
}

// keep stores a persist: false envelope in this process, and with peers its locator in
// the shared store: written first, so that a local entry found always has its locator
// written (current relies on it). A replica that advertises no address deletes the
// locator instead, so that no replica is led to an older version held elsewhere.
func (c *contextStore) keep(ctx context.Context, sl slot, se *storedEnvelope) error {
	ttl := c.keepFor(se)
	le := localEnvelope{storedEnvelope: *se}
	p := c.peers.Load()
	if p != nil {
		var err error
		if p.advertise == "" {
			_, err = c.durable.Delete(ctx, sl.locKey)
		} else {
			le.Secret = newSecret()
			err = c.durable.Set(ctx, sl.locKey, mustMarshal(locator{Addr: p.advertise, Secret: le.Secret}), ttl)
		}
		if err != nil {
			return gateway.AsError(err)
		}
	}
	raw, err := json.Marshal(le) //nolint:gosec // the fetch secret is kept with the envelope, in this process only
	if err != nil {
		return gateway.NewError(schemas.CodeInternal).Wrap(err)
	}
	if err := c.local.Set(ctx, sl.key, raw, ttl); err != nil {
		if le.Secret != nil {
			// The locator would lead to nothing; it expires anyway if this fails too.
			_, _ = c.durable.CompareAndSwap(context.WithoutCancel(ctx), sl.locKey,
				mustMarshal(locator{Addr: p.advertise, Secret: le.Secret}), nil, ttl)
		}
		return localError(err)
	}
	return nil
}

// localError maps a full local store to a quota error.
func localError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, state.ErrFull) {
		return gateway.Errorf(schemas.CodeQuota, "Too many persist: false context envelopes held by this gateway; retry later")
	}
	return gateway.AsError(err)
}

// lookup returns the owner's envelope id: nil when there is none, CONTEXT_EXPIRED when it
// has expired.
func (c *contextStore) lookup(ctx context.Context, owner, id string) (*storedEnvelope, error) {
	return c.find(ctx, sharedSlot(owner, id))
}

// find returns the envelope of a slot: the current one held in this process, else the
// one in the durable store, else, with peers, the one the replica its locator names holds;
// nil when there is none or that replica is gone.
func (c *contextStore) find(ctx context.Context, sl slot) (*storedEnvelope, error) {
	raw, held, err := c.local.Get(ctx, sl.key)
	if err != nil {
		return nil, gateway.AsError(err)
	}
	p := c.peers.Load()
	var loc *locator
	if p != nil {
		if loc, err = c.locate(ctx, sl.locKey); err != nil {
			return nil, err
		}
	}
	if held {
		if p.current(loc) {
			var le localEnvelope
			if err := json.Unmarshal(raw, &le); err != nil {
				return nil, gateway.NewError(schemas.CodeInternal).Wrap(err)
			}
			return c.unexpired(&le.storedEnvelope, sl.id)
		}
		// Replaced or revoked on another replica since: forget it, unless it changed.
		if _, err := c.local.CompareAndSwap(ctx, sl.key, raw, nil, time.Second); err != nil {
			return nil, gateway.AsError(err)
		}
	}
	if sl.durable {
		raw, ok, err := c.durable.Get(ctx, sl.key)
		if err != nil {
			return nil, gateway.AsError(err)
		}
		if ok {
			return c.decode(raw, sl.id)
		}
	}
	if loc == nil || loc.Addr == p.advertise {
		return nil, nil
	}
	return c.fetch(ctx, p, loc, sl)
}

// decode reads a stored envelope and checks it has not expired.
func (c *contextStore) decode(raw []byte, id string) (*storedEnvelope, error) {
	var se storedEnvelope
	if err := json.Unmarshal(raw, &se); err != nil {
		return nil, gateway.NewError(schemas.CodeInternal).Wrap(err)
	}
	return c.unexpired(&se, id)
}

// unexpired returns se, or CONTEXT_EXPIRED when it has expired.
func (c *contextStore) unexpired(se *storedEnvelope, id string) (*storedEnvelope, error) {
	if se.expired(nowMs(c.now())) {
		return nil, errContextExpired(id)
	}
	return se, nil
}

func (se *storedEnvelope) expired(now int64) bool { return now >= se.ExpiresAt }

// remaining returns the envelope with ttl_s set to the whole seconds it has left (rounded
// up).
func (se *storedEnvelope) remaining(now int64) envelope {
	e := se.Envelope
	e.TTLSeconds = (se.ExpiresAt - now + 999) / 1000
	return e
}

// request returns the owner's envelope id with its remaining lifetime, or
// {id, status: not_found}.
func (c *contextStore) request(ctx context.Context, owner, id string) (any, error) {
	se, err := c.lookup(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	if se == nil {
		return nk.ContextResult{ID: id, Status: nk.ContextNotFound}, nil
	}
	return se.remaining(nowMs(c.now())), nil
}

// revoke deletes the owner's envelope id wherever it is kept: in this process, in the
// durable store, and with peers its locator and the copy of the replica it names (told
// at once; one that does not answer has lost its way to the envelope with the locator).
func (c *contextStore) revoke(ctx context.Context, owner, id string) (nk.ContextResult, error) {
	sl := sharedSlot(owner, id)
	found := false
	if p := c.peers.Load(); p != nil {
		loc, err := c.locate(ctx, sl.locKey)
		if err != nil {
			return nk.ContextResult{}, err
		}
		if loc != nil && loc.Addr != p.advertise {
			if found, err = c.revokeAt(ctx, p, loc, sl); err != nil {
				return nk.ContextResult{}, err
			}
		}
		if _, err := c.durable.Delete(ctx, sl.locKey); err != nil {
			return nk.ContextResult{}, gateway.AsError(err)
		}
	}
	for _, kv := range []state.KV{c.local, c.durable} {
		ok, err := kv.Delete(ctx, sl.key)
		if err != nil {
			return nk.ContextResult{}, gateway.AsError(err)
		}
		found = found || ok
	}
	if !found {
		return nk.ContextResult{ID: id, Status: nk.ContextNotFound}, nil
	}
	return nk.ContextResult{ID: id, Status: nk.ContextRevoked}, nil
}

// handle runs one nekte.context call.
func (c *contextStore) handle(ctx context.Context, owner string, p *contextParams) (any, error) {
	switch p.Action {
	case nk.ActionShare:
		return c.share(ctx, owner, p.Envelope)
	case nk.ActionRequest:
		return c.request(ctx, owner, p.Envelope.ID)
	default:
		return c.revoke(ctx, owner, p.Envelope.ID)
	}
}

// forDelegate resolves the context a delegate carries, for a task of the owner running
// capability capID: a reference to a shared envelope (an id without data), or an inline
// envelope. It enforces expiry and forward, and returns what the task record keeps and
// the envelope to hand the capability. An inline persist: false envelope is not kept in
// the record (its taskContext says Local): keepLocal stores it once the task exists.
func (c *contextStore) forDelegate(ctx context.Context, owner, capID string, e *envelope) (*taskContext, *storedEnvelope, error) {
	if e == nil {
		return nil, nil, nil
	}
	if len(e.Data) == 0 && e.ID != "" {
		se, err := c.lookup(ctx, owner, e.ID)
		if err != nil {
			return nil, nil, err
		}
		if se == nil {
			return nil, nil, errContextGone(e.ID)
		}
		if !se.Envelope.mayReach(capID) {
			return nil, nil, errForwardDenied(e.ID, capID)
		}
		return &taskContext{ID: e.ID, Ref: true}, se, nil
	}
	se, err := c.seal(*e, "context")
	if err != nil {
		return nil, nil, err
	}
	if !se.Envelope.mayReach(capID) {
		return nil, nil, errForwardDenied(e.ID, capID)
	}
	if se.Envelope.Permissions.Persist {
		return &taskContext{ID: e.ID, Inline: &se}, &se, nil
	}
	return &taskContext{ID: e.ID, Local: true}, &se, nil
}

// keepLocal stores a task's inline persist: false envelope in this process's store (and
// with peers its locator), for as long as the envelope lives (and its grace).
func (c *contextStore) keepLocal(ctx context.Context, owner, taskID string, se *storedEnvelope) error {
	return c.keep(ctx, taskSlot(owner, taskID, se.Envelope.ID), se)
}

// forTask resolves a task's context again, for a resumed run: the shared envelope it
// refers to (it may have expired, been revoked or re-shared with other permissions), the
// inline one kept in its record, or the persist: false one kept in the process that
// delegated it, which is gone after that process restarts (and, without peers, on
// another replica).
func (c *contextStore) forTask(ctx context.Context, r *record) (*envelope, error) {
	tc := r.Context
	if tc == nil {
		return nil, nil
	}
	var se *storedEnvelope
	switch {
	case tc.Ref:
		found, err := c.lookup(ctx, r.Owner, tc.ID)
		if err != nil {
			return nil, err
		}
		se = found
	case tc.Local:
		found, err := c.find(ctx, taskSlot(r.Owner, r.ID, tc.ID))
		if err != nil {
			return nil, err
		}
		se = found
	default:
		se = tc.Inline
		if se != nil && se.expired(nowMs(c.now())) {
			return nil, errContextExpired(tc.ID)
		}
	}
	if se == nil {
		return nil, errContextGone(tc.ID)
	}
	if !se.Envelope.mayReach(r.Cap) {
		return nil, errForwardDenied(tc.ID, r.Cap)
	}
	return &se.Envelope, nil
}
