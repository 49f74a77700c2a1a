package mcpbackend

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
)

// sharing is what lets one upstream serve several bridges at once: a configuration reload
// builds a new bridge beside the old one (CarryOver), and every upstream whose
// configuration did not change is shared by both — same child process, same sessions, same
// catalog — rather than restarted. The upstream lives until the last bridge owning it
// closes.
type sharing struct {
	mu sync.Mutex
	// owners are the open bridges the upstream serves, oldest first; the newest is the one
	// whose handlers (sampling, elicitation, sessions started) it uses.
	owners []*Bridge
	// cancel ends the upstream's context: its supervisors and refresher stop.
	cancel context.CancelFunc
	// started is set once its goroutines run (start is a no-op for a carried-over one).
	started atomic.Bool
	// creator is the bridge that made the upstream, its owner once all others have left.
	creator *Bridge
}

func newSharing(b *Bridge) sharing { return sharing{owners: []*Bridge{b}, creator: b} }

// CarryOver makes the new bridge share every upstream of prev's bridge whose configuration
// is the same (after defaults), instead of starting it anew: its sessions, child process,
// catalog and subscriptions are kept, and closing prev no longer stops it. An upstream is
// only carried over when the new bridge would declare the same client capabilities to it
// (a sampling or elicitation handler present in both or in neither). prev nil: nothing.
func CarryOver(prev *Target) Option {
	return func(b *Bridge) {
		if prev != nil {
			b.carry = prev.b
		}
	}
}

// upstreamFor returns the upstream for cfg: prev's, shared, when CarryOver allows it,
// else a new one (not started yet).
func (b *Bridge) upstreamFor(cfg Config) *upstream {
	if p := b.carry; p != nil && (p.sampling == nil) == (b.sampling == nil) && (p.elicitation == nil) == (b.elicitation == nil) {
		for _, u := range p.ups {
			if u.cfg.Name == cfg.Name && reflect.DeepEqual(u.cfg, cfg) && u.join(b) {
				return u
			}
		}
	}
	return newUpstream(b, cfg)
}

// join adds b to u's owners; false when u has already stopped (its last owner closed).
func (u *upstream) join(b *Bridge) bool {
	u.shared.mu.Lock()
	defer u.shared.mu.Unlock()
	if len(u.shared.owners) == 0 {
		return false
	}
	u.shared.owners = append(u.shared.owners, b)
	return true
}

// leave removes b from u's owners and reports whether none is left: then u's context is
// ended, and the caller waits for it (close).
func (u *upstream) leave(b *Bridge) (last bool) {
	u.shared.mu.Lock()
	defer u.shared.mu.Unlock()
	u.shared.owners = slices.DeleteFunc(u.shared.owners, func(o *Bridge) bool { return o == b })
	if len(u.shared.owners) == 0 {
		u.shared.cancel()
		return true
	}
	return false
}

// leaveUpstreams releases b's upstreams: those no other bridge shares stop, all at once,
// and it returns once they have.
func (b *Bridge) leaveUpstreams() {
	var stopping []*upstream
	for _, u := range b.ups {
		if u.leave(b) {
			stopping = append(stopping, u)
		}
	}
	for _, u := range stopping {
		u.close()
	}
}

// owner returns the newest bridge u serves (the last one, while it stops).
func (u *upstream) owner() *Bridge {
	u.shared.mu.Lock()
	defer u.shared.mu.Unlock()
	if n := len(u.shared.owners); n > 0 {
		return u.shared.owners[n-1]
	}
	return u.shared.creator // all have left; its goroutines are ending
}

// rebuildOwners recomputes the catalog of every bridge u serves.
func (u *upstream) rebuildOwners() {
	for _, b := range u.owners() {
		b.rebuild()
	}
}

// emitOwners reports e to the listeners of every bridge u serves.
func (u *upstream) emitOwners(e Event) {
	for _, b := range u.owners() {
		b.emit(e)
	}
}

func (u *upstream) owners() []*Bridge {
	u.shared.mu.Lock()
	defer u.shared.mu.Unlock()
	return slices.Clone(u.shared.owners)
}

// Shared reports how many bridges share each upstream of t's bridge, by name (tests,
// and the log of a reload).
func (t *Target) Shared() map[string]int {
	out := make(map[string]int, len(t.b.ups))
	for _, u := range t.b.ups {
		out[u.cfg.Name] = len(u.owners())
	}
	return out
}

// UpstreamHealth reports each upstream of t's bridge by its backend's name
// (BackendPrefix + its name): nil when it has a live session and its catalog is in, else
// why not (the per-target detail of readiness).
func (t *Target) UpstreamHealth() map[string]error {
	out := make(map[string]error, len(t.b.ups))
	for _, u := range t.b.ups {
		st := u.status()
		switch {
		case st.Live == 0:
			out[BackendPrefix+st.Name] = fmt.Errorf("mcp upstream %q: %s", st.Name, st.Reason)
		case !u.isLoaded():
			out[BackendPrefix+st.Name] = fmt.Errorf("mcp upstream %q: catalog not loaded yet", st.Name)
		default:
			out[BackendPrefix+st.Name] = nil
		}
	}
	return out
}
