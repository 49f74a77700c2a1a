package agentlink

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The shared catalog: what the agents of the other replicas offer.
//
// Beside the per-operator routing entries (peer.go), each replica that advertises an
// address publishes its agents' operators — id, description, input and output schema,
// cost hint and the ids of the agents offering each — so that every replica's catalog
// (nekte.discover, nekte.invoke, nekte.delegate, rpc.discover, the MCP face's tools) lists
// them, not only the JSON-RPC method. Two keys hold it:
//
//   - keyReplicas: a JSON object mapping each advertising replica's address to the digest
//     of its catalog and the entry's expiry (missed_heartbeats intervals, refreshed at every
//     heartbeat interval, like the routing entries; compare-and-swap, expired replicas
//     pruned on every write);
//   - prefixReplica + address: that replica's catalog, {"operators":[…]}, at most
//     agents.max_shared_catalog_bytes (operators past the bound are left out, in id order,
//     and a warning says so; they are still reached through their method), expiring with the
//     entry.
//
// Every replica reads the index at every heartbeat interval and fetches a catalog only when
// its digest changed. An operator is listed once however many replicas and agents offer
// it: this replica's own agents' schemas win, else those of the first replica by address;
// a replica offering it with other schemas is not counted for it. A change of the remote
// operators changes the hub's Generation, as an agent connecting here does.

// Shared store keys of the shared catalog.
const (
	keyReplicas   = "agentlink:replicas"
	prefixReplica = "agentlink:replica:"
)

// DefaultMaxSharedCatalogBytes bounds one replica's catalog in the shared store.
const DefaultMaxSharedCatalogBytes = 1 << 20

// sharedOperator is one operator in a replica's shared catalog.
type sharedOperator struct {
	ID          string          `json:"id"`
	Description string          `json:"description,omitempty"`
	Input       json.RawMessage `json:"input"`
	Output      json.RawMessage `json:"output,omitempty"`
	TypicalMs   uint32          `json:"typical_ms,omitempty"`
	Units       uint32          `json:"units,omitempty"`
	Agents      []string        `json:"agents"`
}

// sharedCatalog is one replica's catalog in the shared store.
type sharedCatalog struct {
	Operators []sharedOperator `json:"operators"`
}

// indexEntry is one replica in the shared catalog's index.
type indexEntry struct {
	Digest  string `json:"digest"`
	Expires int64  `json:"exp"` // unix milliseconds
}

// remoteOp is an operator the agents of other replicas offer, as this replica lists it.
type remoteOp struct {
	sharedOperator
	// replicas maps each replica offering it (with the listed schemas) to how many of its
	// agents do.
	replicas map[string]int
}

// remoteView is what this replica knows of the other replicas' catalogs.
type remoteView struct {
	ops    map[string]*remoteOp
	digest string                    // of the replicas and their digests: changes with the view
	cached map[string]*cachedCatalog // by replica address
}

type cachedCatalog struct {
	digest  string
	expires int64
	cat     sharedCatalog
}

// ownCatalog encodes the operators of this replica's agents, at most max bytes: operators
// past the bound are left out (in id order); it returns how many were.
func (h *Hub) ownCatalog(maxBytes int) (raw []byte, left int) {
	h.mu.RLock()
	ops := make([]sharedOperator, 0, len(h.ops))
	for id, o := range h.ops {
		s := sharedOperator{ID: id, Description: o.spec.description, Input: o.spec.input, Output: o.spec.output}
		if o.spec.cost != nil {
			s.TypicalMs, s.Units = o.spec.cost.GetTypicalMs(), o.spec.cost.GetUnits()
		}
		for _, a := range o.agents {
			s.Agents = append(s.Agents, a.id)
		}
		slices.Sort(s.Agents)
		ops = append(ops, s)
	}
	h.mu.RUnlock()
	slices.SortFunc(ops, func(a, b sharedOperator) int { return strings.Compare(a.ID, b.ID) })
	for n := len(ops); n >= 0; n-- {
		raw, _ = json.Marshal(sharedCatalog{Operators: ops[:n]})
		if len(raw) <= maxBytes {
			return raw, len(ops) - n
		}
	}
	return []byte(`{"operators":[]}`), len(ops)
}

func digestOf(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16])
}

// publishCatalog writes this replica's catalog and its index entry (or removes both when
// it offers nothing or is closing).
func (h *Hub) publishCatalog(ctx context.Context, pr *peering, closing bool) error {
	raw, left := h.ownCatalog(h.cfg.MaxSharedCatalogBytes)
	if left > 0 && !pr.truncated {
		h.log.Warn("the operators of this replica's agents exceed agents.max_shared_catalog_bytes: "+
			"the other replicas' catalogs leave some out (their methods still reach them)", "left_out", left)
	}
	pr.truncated = left > 0
	present := !closing && len(raw) > len(`{"operators":[]}`)
	key := prefixReplica + pr.Advertise
	if present {
		if err := h.swapValue(ctx, pr, key, raw); err != nil {
			return err
		}
	}
	now := h.now()
	err := h.casJSON(ctx, pr, keyReplicas, func(m map[string]indexEntry) {
		for addr, e := range m {
			if e.Expires <= now.UnixMilli() {
				delete(m, addr)
			}
		}
		if present {
			m[pr.Advertise] = indexEntry{Digest: digestOf(raw), Expires: now.Add(h.entryTTL()).UnixMilli()}
		} else {
			delete(m, pr.Advertise)
		}
	})
	if err != nil || present {
		return err
	}
	return h.swapValue(ctx, pr, key, nil)
}

// swapValue stores value under key with the entry's ttl (nil deletes), whatever was there.
func (h *Hub) swapValue(ctx context.Context, pr *peering, key string, value []byte) error {
	for range maxCASRounds {
		old, ok, err := pr.Store.Get(ctx, key)
		if err != nil {
			return err
		}
		if !ok {
			old = nil
		}
		if old == nil && value == nil {
			return nil
		}
		if swapped, err := pr.Store.CompareAndSwap(ctx, key, old, value, h.entryTTL()); err != nil || swapped {
			return err
		}
	}
	return fmt.Errorf("%s: the value kept changing (%d rounds)", key, maxCASRounds)
}

// casJSON applies edit to the index under key by compare-and-swap; the key lives as long
// as its longest-lived entry.
func (h *Hub) casJSON(ctx context.Context, pr *peering, key string, edit func(map[string]indexEntry)) error {
	for range maxCASRounds {
		old, ok, err := pr.Store.Get(ctx, key)
		if err != nil {
			return err
		}
		if !ok {
			old = nil
		}
		m := map[string]indexEntry{}
		if len(old) > 0 && json.Unmarshal(old, &m) != nil {
			m = map[string]indexEntry{}
		}
		edit(m)
		var next []byte
		if len(m) > 0 {
			if next, err = json.Marshal(m); err != nil {
				return err
			}
		}
		if old == nil && next == nil {
			return nil
		}
		ttl := h.entryTTL()
		now := h.now()
		for _, e := range m {
			ttl = max(ttl, time.UnixMilli(e.Expires).Sub(now))
		}
		if swapped, err := pr.Store.CompareAndSwap(ctx, key, old, next, ttl); err != nil || swapped {
			return err
		}
	}
	return fmt.Errorf("%s: the index kept changing (%d rounds)", key, maxCASRounds)
}

// readRemote refreshes the view of the other replicas' catalogs from the shared store.
// When the store is out of reach the replicas already known stay listed until their
// entries' expiry. It reports whether the view changed.
func (h *Hub) readRemote(ctx context.Context, pr *peering) bool {
	now := h.now().UnixMilli()
	h.mu.RLock()
	prev := h.remote
	h.mu.RUnlock()
	cached := map[string]*cachedCatalog{}
	raw, ok, err := pr.Store.Get(ctx, keyReplicas)
	if err != nil {
		h.log.Warn("the shared catalog could not be read", "err", err)
		for addr, c := range prev.cached {
			if c.expires > now {
				cached[addr] = c
			}
		}
	} else if ok {
		index := map[string]indexEntry{}
		if json.Unmarshal(raw, &index) != nil {
			index = nil
		}
		for addr, e := range index {
			if addr == pr.Advertise || e.Expires <= now {
				continue
			}
			if c := prev.cached[addr]; c != nil && c.digest == e.Digest {
				cached[addr] = &cachedCatalog{digest: c.digest, expires: e.Expires, cat: c.cat}
				continue
			}
			c, err := h.fetchCatalog(ctx, pr, addr, e)
			if err != nil {
				h.log.Warn("a replica's shared catalog could not be read", "replica", addr, "err", err)
				if old := prev.cached[addr]; old != nil {
					cached[addr] = old
				}
				continue
			}
			if c != nil {
				cached[addr] = c
			}
		}
	}
	next := buildView(cached)
	if next.digest == prev.digest {
		h.mu.Lock()
		h.remote.cached = cached
		h.mu.Unlock()
		return false
	}
	h.mu.Lock()
	h.remote = next
	h.gen.Add(1)
	h.mu.Unlock()
	return true
}

// fetchCatalog reads one replica's catalog; nil when it has none (it lapsed).
func (h *Hub) fetchCatalog(ctx context.Context, pr *peering, addr string, e indexEntry) (*cachedCatalog, error) {
	raw, ok, err := pr.Store.Get(ctx, prefixReplica+addr)
	if err != nil || !ok {
		return nil, err
	}
	if len(raw) > h.cfg.MaxSharedCatalogBytes {
		return nil, fmt.Errorf("the catalog has %d bytes, more than agents.max_shared_catalog_bytes (%d)", len(raw), h.cfg.MaxSharedCatalogBytes)
	}
	var cat sharedCatalog
	if err := json.Unmarshal(raw, &cat); err != nil {
		return nil, fmt.Errorf("the catalog is malformed: %w", err)
	}
	cat.Operators = slices.DeleteFunc(cat.Operators, func(o sharedOperator) bool {
		return !validOperatorID(o.ID) || len(o.Input) == 0 || len(o.Agents) == 0
	})
	return &cachedCatalog{digest: digestOf(raw), expires: e.Expires, cat: cat}, nil
}

// buildView merges the replicas' catalogs: one entry per operator, its schemas those of
// the first replica by address.
func buildView(cached map[string]*cachedCatalog) *remoteView {
	v := &remoteView{ops: map[string]*remoteOp{}, cached: cached}
	addrs := slices.Sorted(mapKeys(cached))
	var d strings.Builder
	for _, addr := range addrs {
		c := cached[addr]
		d.WriteString(addr + "=" + c.digest + ";")
		for _, o := range c.cat.Operators {
			r := v.ops[o.ID]
			if r == nil {
				r = &remoteOp{sharedOperator: o, replicas: map[string]int{}}
				r.Agents = nil
				v.ops[o.ID] = r
			} else if !jsonEqual(r.Input, o.Input) || !jsonEqual(r.Output, o.Output) {
				continue
			}
			r.replicas[addr] = len(o.Agents)
			r.Agents = append(r.Agents, o.Agents...)
		}
	}
	for _, r := range v.ops {
		slices.Sort(r.Agents)
		r.Agents = slices.Compact(r.Agents)
	}
	v.digest = d.String()
	return v
}
