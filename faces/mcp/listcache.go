package mcpface

import (
	"container/list"
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// The list cache. tools/list, resources/list, resources/templates/list and prompts/list
// show each caller the catalog narrowed by the policy (lists.go): one visibility decision
// per entry, each a policy match. The face keeps the narrowed lists it built, keyed by
// exactly what that narrowing reads:
//
//   - the method and the cursor of the request (the page);
//   - the caller's view: what the configuration's Visibility reads of the caller — its
//     zone, its protocol and what the policy's filter reads of the principal, the set of
//     its scopes (Visibility.ViewKey; policy.Engine.FilterKey). Two callers with the same
//     view get the same decision for every entry, so they share an entry; callers whose
//     views differ never do. A Visibility that cannot name its inputs is not cached;
//   - the catalog version: a number the face moves on whenever what it publishes changes
//     (an upstream's list_changed, an agent connecting or leaving, a reload), which also
//     empties the cache; the version is read before mcp-go builds the list (a hook before
//     it), so a list built from an older catalog is never stored under a newer version;
//   - the configuration's Visibility itself (a reload builds a new one, with its policy and
//     routes): an entry built under another is not served.
//
// An entry lives at most mcp_face.list_cache.max_age; the cache holds at most max_entries
// entries and max_bytes bytes of their items (as JSON), dropping the least recently used
// first. It lives in the process, per replica, on purpose: an entry is a function of this
// replica's catalog and configuration, each replica hears list_changed and reloads itself,
// and a round trip to the shared state store would cost as much as the narrowing it saves.
//
// On results to 2026-07-28 requests the face sets ttlMs and cacheScope consistently with
// it: ttlMs is what remains of the entry's life (max_age for a list nothing narrows), so a
// client's copy never outlives the gateway's; cacheScope is private whenever the list
// depends on who asks — public only when nothing is hidden from anyone and the caller came
// without credentials, so that the list is the same for every caller the gateway admits.
// Requests without a face request (stdio, the legacy SSE transport) are narrowed without
// the cache.

// viewKeyer is a Visibility that names what its decision reads of a caller.
type viewKeyer interface {
	// ViewKey returns a key equal for two callers exactly when ShowsCall answers them the
	// same for every call; false when it cannot say (then nothing is cached).
	ViewKey(p gateway.Principal, zone gateway.TrustZone, proto gateway.Protocol) (string, bool)
}

// ListCacheStats are the list cache's counters since the face started.
type ListCacheStats struct {
	// Hits are the list requests answered from the cache.
	Hits uint64
	// Misses are the list requests narrowed and stored.
	Misses uint64
	// Evictions are the entries dropped: for the bounds (least recently used), expired, or
	// invalidated by a catalog change.
	Evictions uint64
	// Entries and Bytes are what the cache holds now.
	Entries, Bytes int
}

// listEntry is one narrowed list.
type listEntry struct {
	key     string
	vis     Visibility
	items   any // the narrowed slice ([]mcp.Tool …): shared, never modified
	next    mcp.Cursor
	bytes   int
	expires time.Time
}

// listCache is the bounded cache of narrowed lists.
type listCache struct {
	maxEntries int
	maxBytes   int
	maxAge     time.Duration
	now        func() time.Time

	version atomic.Uint64 // the catalog version

	mu      sync.Mutex
	entries map[string]*list.Element // of *listEntry
	lru     *list.List               // most recently used first
	bytes   int

	hits, misses, evictions atomic.Uint64
}

func newListCache(c ListCacheConfig, now func() time.Time) *listCache {
	if !c.on() {
		return nil
	}
	if now == nil {
		now = time.Now
	}
	return &listCache{maxEntries: c.maxEntries(), maxBytes: c.maxBytes(), maxAge: c.maxAge(), now: now,
		entries: map[string]*list.Element{}, lru: list.New()}
}

// invalidate moves the catalog version on and empties the cache. Nil-safe.
func (c *listCache) invalidate() {
	if c == nil {
		return
	}
	c.version.Add(1)
	c.mu.Lock()
	for c.lru.Len() > 0 {
		c.remove(c.lru.Back())
		c.evictions.Add(1)
	}
	c.mu.Unlock()
}

// get returns the live entry of key built under vis.
func (c *listCache) get(key string, vis Visibility) (*listEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*listEntry)
	if e.vis != vis || !c.now().Before(e.expires) {
		c.remove(el)
		c.evictions.Add(1)
		return nil, false
	}
	c.lru.MoveToFront(el)
	return e, true
}

// put stores e unless its catalog version is no longer current or it alone exceeds the
// bytes bound, evicting the least recently used entries past the bounds.
func (c *listCache) put(e *listEntry, version uint64) {
	if e.bytes > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version.Load() != version { // the catalog changed while the list was built
		return
	}
	if el, ok := c.entries[e.key]; ok {
		c.remove(el)
	}
	c.entries[e.key] = c.lru.PushFront(e)
	c.bytes += e.bytes
	for c.lru.Len() > c.maxEntries || c.bytes > c.maxBytes {
		c.remove(c.lru.Back())
		c.evictions.Add(1)
	}
}

// remove drops el; c.mu is held.
func (c *listCache) remove(el *list.Element) {
	e := c.lru.Remove(el).(*listEntry)
	delete(c.entries, e.key)
	c.bytes -= e.bytes
}

func (c *listCache) stats() ListCacheStats {
	c.mu.Lock()
	n, b := c.lru.Len(), c.bytes
	c.mu.Unlock()
	return ListCacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Evictions: c.evictions.Load(), Entries: n, Bytes: b}
}

// ListCacheStats returns the list cache's counters; false when the cache is off.
func (f *Face) ListCacheStats() (ListCacheStats, bool) {
	if f.lists == nil {
		return ListCacheStats{}, false
	}
	return f.lists.stats(), true
}

// listVersions is where a hook before a list records the catalog version it was built
// from, for the hook after it; keyed by the request's pointer (a batch holds several).
type listVersions struct{ m sync.Map }

// markListVersion records the catalog version before mcp-go builds the list of req.
func (f *Face) markListVersion(ctx context.Context, req any) {
	if f.lists == nil {
		return
	}
	if fr := faceRequestOf(ctx); fr != nil {
		fr.lists.m.Store(req, f.lists.version.Load())
	}
}

// narrow sets *items to what the caller of ctx sees of them, from the cache when it can:
// shows decides one item (faceCaller's showsTool …). It sets the 2026-07-28 cache hints on
// res.
func narrow[T any](f *Face, ctx context.Context, method string, req any, cursor mcp.Cursor,
	items *[]T, next *mcp.Cursor, res *mcp.CacheableResult, shows func(faceCaller, T) bool) {
	rt := f.gw.Acquire()
	defer rt.Release()
	v := rt.Visibility()
	principal, _ := ctx.Value(principalKey{}).(gateway.Principal)
	zone := callerZone(ctx)
	target := f.target()
	if !v.Filters() || (target == nil && f.agentNames.Load() == nil) {
		f.cacheHints(ctx, res, f.lists.maxAgeOrZero(), principal.Anonymous && !v.Filters())
		return
	}
	c := faceCaller{v: v, principal: principal, zone: zone, isAgentTool: f.isAgentTool}
	if target != nil {
		c.namespace = target.Namespace()
	}
	run := func() { *items = keep(*items, func(it T) bool { return shows(c, it) }) }

	lc := f.lists
	fr := faceRequestOf(ctx)
	vk, keyed := v.(viewKeyer)
	if lc == nil || fr == nil || !keyed {
		run()
		return
	}
	stamp, marked := fr.lists.m.LoadAndDelete(req)
	view, ok := vk.ViewKey(principal, zone, gateway.ProtocolMCP)
	if !marked || !ok {
		run()
		return
	}
	version := stamp.(uint64)
	key := method + "\x00" + string(cursor) + "\x00" + strconv.FormatUint(version, 10) + "\x00" + view
	if e, hit := lc.get(key, v); hit {
		lc.hits.Add(1)
		*items, *next = e.items.([]T), e.next
		f.cacheHints(ctx, res, e.expires.Sub(lc.now()), false)
		return
	}
	lc.misses.Add(1)
	run()
	size := 0
	if b, err := json.Marshal(*items); err == nil {
		size = len(b) + len(key)
	}
	e := &listEntry{key: key, vis: v, items: *items, next: *next, bytes: size, expires: lc.now().Add(lc.maxAge)}
	lc.put(e, version)
	f.cacheHints(ctx, res, lc.maxAge, false)
}

// maxAgeOrZero is the cache's max age, zero when the cache is off.
func (c *listCache) maxAgeOrZero() time.Duration {
	if c == nil {
		return 0
	}
	return c.maxAge
}

// cacheHints sets ttlMs and cacheScope on the result of a 2026-07-28 request (earlier
// revisions have neither; mcp-go sets its defaults, 0 and private, otherwise): ttl is how
// long the list stays what the gateway serves, public whether it is the same for anyone.
func (f *Face) cacheHints(ctx context.Context, res *mcp.CacheableResult, ttl time.Duration, public bool) {
	if f.lists == nil || res == nil || !mcpserver.IsModernRequest(ctx) {
		return
	}
	scope := mcp.CacheScopePrivate
	if public {
		scope = mcp.CacheScopePublic
	}
	res.SetCacheHints(max(ttl.Milliseconds(), 0), scope)
}
