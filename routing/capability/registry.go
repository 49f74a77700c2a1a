package capability

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
)

// Registry is the capability catalog. Its contents are an immutable snapshot swapped
// atomically: readers (Discover, Invoke, Lookup, Match, Card) load the current snapshot and
// take no lock. Before serving, a reader compares each source's Generation with the one
// the snapshot was built from; when one changed, the first reader to notice rebuilds the
// snapshot under a mutex (concurrent readers wait for it and use the new one), so a
// change upstream is visible to the very next call. A Registry is safe for concurrent use.
type Registry struct {
	cfg        Config
	sources    []Source
	validators *validatorCache

	mu     sync.Mutex   // serialises rebuilds
	static []Capability // set by Update; guarded by mu
	snap   atomic.Pointer[snapshot]
}

// New returns a registry over sources with cfg (defaults applied), its first snapshot
// built.
func New(cfg Config, sources ...Source) (*Registry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Registry{cfg: cfg.WithDefaults(), sources: sources, validators: newValidatorCache(validatorCacheSize)}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.snap.Store(r.build(nil))
	return r, nil
}

// Update replaces the registry's own capabilities (those given here rather than by a
// source) with caps and rebuilds the snapshot at once. Capabilities from sources are
// kept. Capabilities that cannot be served are left out and reported by Problems.
func (r *Registry) Update(caps []Capability) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.static = append([]Capability(nil), caps...)
	r.snap.Store(r.build(r.snap.Load()))
}

// current returns the snapshot to serve from, rebuilt first if a source has changed.
func (r *Registry) current() *snapshot {
	if s := r.snap.Load(); r.fresh(s) {
		return s
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.snap.Load()
	if !r.fresh(s) {
		s = r.build(s)
		r.snap.Store(s)
	}
	return s
}

// fresh reports whether no source has changed since s was built.
func (r *Registry) fresh(s *snapshot) bool {
	for i, src := range r.sources {
		if src.Generation() != s.generations[i] {
			return false
		}
	}
	return true
}

// build makes a snapshot of the static capabilities and every source's. Called with mu
// held.
func (r *Registry) build(prev *snapshot) *snapshot {
	caps := append([]Capability(nil), r.static...)
	gens := make([]uint64, len(r.sources))
	for i, src := range r.sources {
		c, g := src.Capabilities()
		caps = append(caps, c...)
		gens[i] = g
	}
	return newSnapshot(&r.cfg, caps, gens, prev)
}

// Version returns the catalog version: a hash of every capability's id, category, version
// hash and description, the v of discover results. It changes whenever any of them does.
func (r *Registry) Version() string { return r.current().version }

// Problems lists the capabilities the current snapshot left out or renamed, and why.
func (r *Registry) Problems() []Problem { return append([]Problem(nil), r.current().problems...) }

// Lookup returns the capability with id, with its cost hint as observed so far. Its
// schemas and examples are shared with the catalog and must not be modified.
func (r *Registry) Lookup(id string) (Capability, bool) {
	e, ok := r.current().byID[id]
	if !ok {
		return Capability{}, false
	}
	return e.capability(), true
}

// Match returns the capability that best matches query (ranked search over ids and
// descriptions, as discover's query filter), if its score reaches the configured
// threshold. nekte.delegate uses it for a task that names no capability.
func (r *Registry) Match(query string) (Capability, bool) {
	s := r.current()
	hits := s.index.search(query, nil, 1, r.cfg.threshold())
	if len(hits) == 0 {
		return Capability{}, false
	}
	return s.entries[hits[0].doc].capability(), true
}

// Capabilities returns every capability of the current snapshot, sorted by id.
func (r *Registry) Capabilities() []Capability {
	s := r.current()
	out := make([]Capability, len(s.entries))
	for i, e := range s.entries {
		out[i] = e.capability()
	}
	return out
}

// Card returns the agent card of the gateway served at endpoint: the agent name, the ids
// of every capability, budget support. Auth is AuthNone; the server sets it from its
// authentication configuration. It is CardFor with no visibility filter.
func (r *Registry) Card(endpoint string) nekte.AgentCard { return r.CardFor(endpoint, nil) }

// CardFor is Card listing only the capabilities visible reports true for (nil: all), in
// id order. The server passes what a caller without credentials may see, since the card
// is served to anyone.
func (r *Registry) CardFor(endpoint string, visible func(Capability) bool) nekte.AgentCard {
	s := r.current()
	shown := s.visibleEntries(s.viewOf(visible))
	ids := make([]string, len(shown))
	for i, e := range shown {
		ids[i] = e.ID
	}
	return nekte.AgentCard{
		Nekte:         nekte.ProtocolVersion,
		Agent:         r.cfg.Agent,
		Endpoint:      endpoint,
		Caps:          ids,
		Auth:          nekte.AuthNone,
		BudgetSupport: true,
	}
}

// Observe records one served call of capability id: its latency and the tokens of the
// result returned. The cost hint (discover L1 and L2 cost) is an exponentially weighted
// moving average of both. Unknown ids are ignored. Invoke observes its own calls;
// nekte.delegate observes the tasks it runs.
func (r *Registry) Observe(id string, d time.Duration, tokens int) {
	if e, ok := r.current().byID[id]; ok {
		e.cost.observe(d, tokens)
	}
}
