package nekte

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// locate returns the locator under key; nil when there is none (or it is unreadable,
// which is logged: a locator only ever leads to an envelope, never to an error).
func (c *contextStore) locate(ctx context.Context, key string) (*locator, error) {
	raw, ok, err := c.durable.Get(ctx, key)
	if err != nil {
		return nil, gateway.AsError(err)
	}
	if !ok {
		return nil, nil
	}
	var loc locator
	if err := json.Unmarshal(raw, &loc); err != nil || loc.Addr == "" || len(loc.Secret) != secretBytes {
		c.log.Warn("nekte: ignoring a malformed context locator", "key", key, "error", err)
		return nil, nil
	}
	return &loc, nil
}

// current reports whether an envelope held in this process is the current version, given
// its locator (nil: none). Without peers it always is. A replica that advertises an
// address writes the locator before the envelope (keep), so its own envelope is current
// while the locator names it, and stale when the locator is gone (revoked, or re-shared
// with persist: true, elsewhere) or names another replica (re-shared there). A replica
// that advertises none deletes the locator instead: its envelope is stale once another
// replica wrote one.
func (p *peering) current(loc *locator) bool {
	switch {
	case p == nil:
		return true
	case p.advertise == "":
		return loc == nil
	default:
		return loc != nil && loc.Addr == p.advertise
	}
}

// fetch asks the replica loc names for the envelope of sl, within contexts.peer_timeout.
// A replica that does not hold it, cannot be reached or answers nonsense leaves it
// missing (nil); only the caller's own context ending is an error.
func (c *contextStore) fetch(ctx context.Context, p *peering, loc *locator, sl slot) (*storedEnvelope, error) {
	ref := sl.ref
	ref.Secret = loc.Secret
	callCtx, cancel := context.WithTimeout(ctx, c.cfg.PeerTimeout)
	defer cancel()
	raw, err := p.client.GetEnvelope(callCtx, loc.Addr, ref)
	if err != nil {
		return nil, c.peerFailed(ctx, "get", loc, sl, err)
	}
	var se storedEnvelope
	if err := json.Unmarshal(raw, &se); err != nil || se.Envelope.ID != sl.id {
		c.log.Warn("nekte: a replica answered with a malformed context envelope", "replica", loc.Addr, "envelope", sl.id, "error", err)
		return nil, nil
	}
	return c.unexpired(&se, sl.id)
}

// revokeAt tells the replica loc names to drop the envelope of sl, within
// contexts.peer_timeout, and reports whether it was there: a replica that does not answer
// counts as having had it (its locator, deleted next, was its only way to other replicas).
func (c *contextStore) revokeAt(ctx context.Context, p *peering, loc *locator, sl slot) (bool, error) {
	ref := sl.ref
	ref.Secret = loc.Secret
	callCtx, cancel := context.WithTimeout(ctx, c.cfg.PeerTimeout)
	defer cancel()
	err := p.client.RevokeEnvelope(callCtx, loc.Addr, ref)
	if err == nil {
		return true, nil
	}
	if err := c.peerFailed(ctx, "revoke", loc, sl, err); err != nil {
		return false, err
	}
	return !errors.Is(err, ErrPeerNotFound), nil
}

// peerFailed handles a failed peer call: nil for a replica that does not hold the
// envelope, or one that is gone (logged); the caller's own context error when that ended.
func (c *contextStore) peerFailed(ctx context.Context, op string, loc *locator, sl slot, err error) error {
	if errors.Is(err, ErrPeerNotFound) {
		return nil
	}
	if ctx.Err() != nil {
		return gateway.AsError(ctx.Err())
	}
	c.log.Warn("nekte: the replica holding a persist: false context envelope did not answer; the envelope counts as gone",
		"op", op, "replica", loc.Addr, "envelope", sl.id, "error", err)
	return nil
}
