package mcpbackend

import (
	"container/list"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// The read cache. An upstream on 2026-07-28 says in each resources/read result how long
// the result stays fresh (ttlMs) and who may share it (cacheScope: "public" — any client
// may be served it; anything else, "private" by default — only the client it was made
// for). The bridge keeps such results and serves them again until they are stale, so a
// resource many callers read is fetched once per ttl instead of once per call.
//
// The key is the upstream, the URI and, unless the scope is public, who the caller is to
// the upstream: the principal's issuer, subject and scopes (never raw token bytes, so a
// refreshed token keeps its entries). A private result is therefore served again only to
// the same principal with the same scopes, a public one to anyone. Whether the caller may
// read the resource at all is not the cache's business: the read is a call through the
// pipeline, so policy, rate limits, metering and tracing run before the target is reached,
// hit or miss.
//
// An entry lives for the upstream's ttlMs, never more than read_cache.max_ttl; a result
// without ttlMs, with ttlMs 0, or an error is never stored. The cache holds at most
// max_entries entries and max_bytes bytes of results, dropping the least recently used
// first. It is emptied when the catalog's resources or templates change (list_changed,
// an upstream going or coming back, a reload builds a new bridge), and an upstream's
// notifications/resources/updated for a URI drops that URI's entries. A result served
// from the cache carries the time it has left as its ttlMs.

// ReadCacheConfig bounds the read cache (routing.mcp.read_cache).
type ReadCacheConfig struct {
	// Enabled turns the cache on (default true); false: every resources/read reaches its
	// upstream.
	Enabled *bool `yaml:"enabled" json:"enabled,omitempty"`
	// MaxEntries bounds the results held (default 1024).
	MaxEntries int `yaml:"max_entries" json:"max_entries,omitempty"`
	// MaxBytes bounds the size of the results held, as JSON (default 8 MiB); a larger
	// result is not stored.
	MaxBytes int `yaml:"max_bytes" json:"max_bytes,omitempty"`
	// MaxTTL caps how long a result is served from the cache, whatever the upstream's
	// ttlMs says (default 5m).
	MaxTTL time.Duration `yaml:"max_ttl" json:"max_ttl,omitempty"`
}

// Defaults of ReadCacheConfig.
const (
	DefaultReadCacheEntries = 1024
	DefaultReadCacheBytes   = 8 << 20
	DefaultReadCacheMaxTTL  = 5 * time.Minute
)

// Validate refuses negative bounds.
func (c ReadCacheConfig) Validate() error {
	var errs []error
	if c.MaxEntries < 0 {
		errs = append(errs, errors.New("read_cache.max_entries must not be negative"))
	}
	if c.MaxBytes < 0 {
		errs = append(errs, errors.New("read_cache.max_bytes must not be negative"))
	}
	if c.MaxTTL < 0 {
		errs = append(errs, errors.New("read_cache.max_ttl must not be negative"))
	}
	return errors.Join(errs...)
}

func (c ReadCacheConfig) withDefaults() ReadCacheConfig {
	if c.MaxEntries == 0 {
		c.MaxEntries = DefaultReadCacheEntries
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultReadCacheBytes
	}
	if c.MaxTTL == 0 {
		c.MaxTTL = DefaultReadCacheMaxTTL
	}
	return c
}

// WithReadCache sets the bounds of the bridge's read cache (on by default, with the
// defaults of ReadCacheConfig).
func WithReadCache(c ReadCacheConfig) Option {
	return func(b *Bridge) { b.readCacheCfg = c }
}

// ReadCacheStats are the read cache's counters since the bridge started, and what it
// holds now.
type ReadCacheStats struct {
	Hits, Misses, Evictions uint64
	Entries, Bytes          int
}

// cacheScopePublic is the cacheScope under which a result may be served to anyone.
const cacheScopePublic = "public"

// readEntry is one cached resources/read result.
type readEntry struct {
	key      string
	upstream string
	uri      string
	result   json.RawMessage // as the upstream sent it
	expires  time.Time
}

// readCache holds resources/read results by (upstream, URI, caller).
type readCache struct {
	cfg ReadCacheConfig
	now func() time.Time

	mu      sync.Mutex
	entries map[string]*list.Element // of *readEntry
	lru     *list.List               // most recently used first
	bytes   int

	hits, misses, evictions atomic.Uint64
}

func newReadCache(c ReadCacheConfig, now func() time.Time) *readCache {
	if c.Enabled != nil && !*c.Enabled {
		return nil
	}
	return &readCache{cfg: c.withDefaults(), now: now, entries: map[string]*list.Element{}, lru: list.New()}
}

// readKey is the key of a read of uri on upstream by caller p, under scope.
func readKey(upstream, uri string, p *gateway.Principal, scope string) string {
	var b strings.Builder
	b.WriteString(upstream)
	b.WriteByte(0)
	b.WriteString(uri)
	b.WriteByte(0)
	if scope == cacheScopePublic {
		return b.String()
	}
	b.WriteString(callerIdentity(p))
	return b.String()
}

// callerIdentity is who a caller is to an upstream, for private results: issuer, subject,
// anonymity and the sorted scopes (the hop token narrows by them).
func callerIdentity(p *gateway.Principal) string {
	if p == nil {
		return "\x01none"
	}
	iss, _ := p.Claims["iss"].(string)
	scopes := slices.Clone(p.Scopes)
	slices.Sort(scopes)
	return strconv.Quote(iss) + "\x00" + strconv.Quote(p.Subject) + "\x00" + strconv.FormatBool(p.Anonymous) + "\x00" + strings.Join(scopes, " ")
}

// get returns the live result cached for a read of uri on upstream by p, with its ttlMs
// set to what is left of its life; both keys are tried, the public one first.
func (c *readCache) get(upstream, uri string, p *gateway.Principal) (json.RawMessage, bool) {
	if c == nil {
		return nil, false
	}
	for _, scope := range [...]string{cacheScopePublic, ""} {
		if res, ok := c.lookup(readKey(upstream, uri, p, scope)); ok {
			c.hits.Add(1)
			return res, true
		}
	}
	c.misses.Add(1)
	return nil, false
}

func (c *readCache) lookup(key string) (json.RawMessage, bool) {
	c.mu.Lock()
	el, ok := c.entries[key]
	if !ok {
		c.mu.Unlock()
		return nil, false
	}
	e := el.Value.(*readEntry)
	left := e.expires.Sub(c.now())
	if left <= 0 {
		c.remove(el)
		c.evictions.Add(1)
		c.mu.Unlock()
		return nil, false
	}
	c.lru.MoveToFront(el)
	res := e.result
	c.mu.Unlock()
	out, err := withTTL(res, left.Milliseconds())
	if err != nil {
		return nil, false
	}
	return out, true
}

// cacheHints are the hints of a resources/read result.
type cacheHints struct {
	TTLMs      *int64 `json:"ttlMs"`
	CacheScope string `json:"cacheScope"`
}

// put stores result, the answer to a read of uri on upstream by p, when its hints allow.
func (c *readCache) put(upstream, uri string, p *gateway.Principal, result json.RawMessage) {
	if c == nil || len(result) > c.cfg.MaxBytes {
		return
	}
	var h cacheHints
	if json.Unmarshal(result, &h) != nil || h.TTLMs == nil || *h.TTLMs <= 0 {
		return
	}
	ttl := min(time.Duration(*h.TTLMs)*time.Millisecond, c.cfg.MaxTTL)
	key := readKey(upstream, uri, p, h.CacheScope)
	e := &readEntry{key: key, upstream: upstream, uri: uri, result: result, expires: c.now().Add(ttl)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.remove(el)
	}
	c.entries[key] = c.lru.PushFront(e)
	c.bytes += len(result)
	for c.lru.Len() > c.cfg.MaxEntries || c.bytes > c.cfg.MaxBytes {
		c.remove(c.lru.Back())
		c.evictions.Add(1)
	}
}

// drop removes the entries match selects; nil-safe.
func (c *readCache) drop(match func(*readEntry) bool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.lru.Front(); el != nil; {
		next := el.Next()
		if match(el.Value.(*readEntry)) {
			c.remove(el)
			c.evictions.Add(1)
		}
		el = next
	}
}

// remove drops el; c.mu is held.
func (c *readCache) remove(el *list.Element) {
	e := c.lru.Remove(el).(*readEntry)
	delete(c.entries, e.key)
	c.bytes -= len(e.result)
}

func (c *readCache) stats() ReadCacheStats {
	c.mu.Lock()
	n, b := c.lru.Len(), c.bytes
	c.mu.Unlock()
	return ReadCacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Evictions: c.evictions.Load(), Entries: n, Bytes: b}
}

// withTTL returns result with its ttlMs member set to ms.
func withTTL(result json.RawMessage, ms int64) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(result, &m); err != nil {
		return nil, err
	}
	m["ttlMs"] = json.RawMessage(strconv.FormatInt(max(ms, 0), 10))
	return json.Marshal(m)
}

// ReadCacheStats returns the read cache's counters; false when it is off.
func (b *Bridge) ReadCacheStats() (ReadCacheStats, bool) {
	if b.reads == nil {
		return ReadCacheStats{}, false
	}
	return b.reads.stats(), true
}

// ReadCacheStats is Bridge.ReadCacheStats.
func (t *Target) ReadCacheStats() (ReadCacheStats, bool) { return t.b.ReadCacheStats() }

// resourcesChanged empties the read cache when the catalog's resources or templates
// changed: a URI may now belong to another upstream, or be gone.
func (b *Bridge) resourcesChanged(d Delta) {
	if !d.Resources.Empty() || !d.ResourceTemplates.Empty() {
		b.reads.drop(func(*readEntry) bool { return true })
	}
}

// resourceUpdated drops the cached reads of uri on upstream.
func (b *Bridge) resourceUpdated(upstream, uri string) {
	b.reads.drop(func(e *readEntry) bool { return e.upstream == upstream && e.uri == uri })
}
