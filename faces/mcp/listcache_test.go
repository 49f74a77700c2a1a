package mcpface

import (
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// fakeVis is a Visibility for the cache's own tests.
type fakeVis struct{ name string }

func (*fakeVis) Filters() bool { return true }
func (*fakeVis) ShowsCall(gateway.Principal, gateway.TrustZone, gateway.Protocol, *gateway.Call) bool {
	return true
}

// testClock is an injected clock.
type testClock struct{ t time.Time }

func (c *testClock) now() time.Time { return c.t }

func entry(key string, vis Visibility, bytes int, c *listCache) *listEntry {
	return &listEntry{key: key, vis: vis, items: []mcp.Tool{{Name: key}}, bytes: bytes, expires: c.now().Add(c.maxAge)}
}

func TestListCacheTTL(t *testing.T) {
	clock := &testClock{t: time.Unix(1000, 0)}
	c := newListCache(ListCacheConfig{MaxAge: time.Second}, clock.now)
	v := &fakeVis{}
	c.put(entry("k", v, 10, c), c.version.Load())
	tests := []struct {
		after time.Duration
		hit   bool
	}{
		{0, true},
		{999 * time.Millisecond, true},
		{time.Second, false}, // expired at max_age exactly
	}
	for _, tt := range tests {
		clock.t = time.Unix(1000, 0).Add(tt.after)
		if _, hit := c.get("k", v); hit != tt.hit {
			t.Fatalf("after %v: hit %v, want %v", tt.after, hit, tt.hit)
		}
	}
	if st := c.stats(); st.Entries != 0 || st.Evictions != 1 || st.Bytes != 0 {
		t.Fatalf("after expiry: %+v, want the entry evicted", st)
	}
}

func TestListCacheBounds(t *testing.T) {
	tests := []struct {
		name            string
		cfg             ListCacheConfig
		sizes           []int
		want            []string // the keys still held
		wantEvictions   uint64
		wantBytesHeldAt int
	}{
		{"entries at the bound", ListCacheConfig{MaxEntries: 3}, []int{1, 1, 1}, []string{"0", "1", "2"}, 0, 3},
		{"one past the entries bound drops the oldest", ListCacheConfig{MaxEntries: 3}, []int{1, 1, 1, 1}, []string{"1", "2", "3"}, 1, 3},
		{"bytes exactly at the bound", ListCacheConfig{MaxBytes: 30}, []int{10, 10, 10}, []string{"0", "1", "2"}, 0, 30},
		{"one byte past the bound drops the oldest", ListCacheConfig{MaxBytes: 30}, []int{10, 10, 11}, []string{"1", "2"}, 1, 21},
		{"an entry larger than the bound is not stored", ListCacheConfig{MaxBytes: 30}, []int{10, 31}, []string{"0"}, 0, 10},
		{"an entry of the whole bound evicts the rest", ListCacheConfig{MaxBytes: 30}, []int{10, 10, 30}, []string{"2"}, 2, 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &testClock{t: time.Unix(1000, 0)}
			c := newListCache(tt.cfg, clock.now)
			v := &fakeVis{}
			for i, size := range tt.sizes {
				c.put(entry(string(rune('0'+i)), v, size, c), c.version.Load())
			}
			st := c.stats()
			if st.Entries != len(tt.want) || st.Evictions != tt.wantEvictions || st.Bytes != tt.wantBytesHeldAt {
				t.Fatalf("stats %+v; want %d entries, %d evictions, %d bytes", st, len(tt.want), tt.wantEvictions, tt.wantBytesHeldAt)
			}
			for _, k := range tt.want {
				if _, ok := c.get(k, v); !ok {
					t.Errorf("key %s was evicted", k)
				}
			}
		})
	}
}

// TestListCacheLRU: a get keeps an entry from being the one evicted.
func TestListCacheLRU(t *testing.T) {
	c := newListCache(ListCacheConfig{MaxEntries: 2}, nil)
	v := &fakeVis{}
	c.put(entry("a", v, 1, c), 0)
	c.put(entry("b", v, 1, c), 0)
	c.get("a", v)
	c.put(entry("c", v, 1, c), 0)
	if _, ok := c.get("b", v); ok {
		t.Fatal("b, the least recently used, is still held")
	}
	if _, ok := c.get("a", v); !ok {
		t.Fatal("a, used last, was evicted")
	}
}

// TestListCacheInvalidation: a catalog change empties the cache; a list built from the
// version before it is not stored; an entry built under another Visibility (a reload) is
// not served.
func TestListCacheInvalidation(t *testing.T) {
	c := newListCache(ListCacheConfig{}, nil)
	v, reloaded := &fakeVis{"a"}, &fakeVis{"b"}
	old := c.version.Load()
	c.put(entry("k", v, 1, c), old)
	c.invalidate()
	if _, ok := c.get("k", v); ok {
		t.Fatal("an entry survived the catalog change")
	}
	c.put(entry("k", v, 1, c), old) // built before the change, stored after it
	if _, ok := c.get("k", v); ok {
		t.Fatal("a list of the old catalog version was stored")
	}
	c.put(entry("k", v, 1, c), c.version.Load())
	if _, ok := c.get("k", reloaded); ok {
		t.Fatal("an entry built under another configuration's visibility was served")
	}
	if st := c.stats(); st.Evictions != 2 {
		t.Fatalf("evictions %d, want 2 (invalidated, another visibility)", st.Evictions)
	}
}

func TestListCacheConfig(t *testing.T) {
	off := false
	if newListCache(ListCacheConfig{Enabled: &off}, nil) != nil {
		t.Fatal("the cache is on with enabled: false")
	}
	c := newListCache(ListCacheConfig{}, nil)
	if c.maxEntries != DefaultListCacheEntries || c.maxBytes != DefaultListCacheBytes || c.maxAge != DefaultListCacheMaxAge {
		t.Fatalf("defaults %d %d %v", c.maxEntries, c.maxBytes, c.maxAge)
	}
	tests := []struct {
		cfg  ListCacheConfig
		want string
	}{
		{ListCacheConfig{}, ""},
		{ListCacheConfig{MaxEntries: 1, MaxBytes: 1, MaxAge: time.Millisecond}, ""},
		{ListCacheConfig{MaxEntries: -1}, "max_entries must not be negative"},
		{ListCacheConfig{MaxBytes: -1}, "max_bytes must not be negative"},
		{ListCacheConfig{MaxAge: -time.Second}, "max_age must not be negative"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%+v: %v, want %q", tt.cfg, err, tt.want)
		}
	}
}
