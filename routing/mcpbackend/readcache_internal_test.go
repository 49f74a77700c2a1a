package mcpbackend

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// readResult is a resources/read result with the given hints ("" leaves a member out).
func readResult(text, ttl, scope string) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"contents":[{"uri":"res://a","text":"` + text + `"}]`)
	if ttl != "" {
		b.WriteString(`,"ttlMs":` + ttl)
	}
	if scope != "" {
		b.WriteString(`,"cacheScope":"` + scope + `"`)
	}
	b.WriteString("}")
	return json.RawMessage(b.String())
}

// ttlOf reads a result's ttlMs.
func ttlOf(t *testing.T, res json.RawMessage) int64 {
	t.Helper()
	var h cacheHints
	if err := json.Unmarshal(res, &h); err != nil || h.TTLMs == nil {
		t.Fatalf("result %s: no ttlMs (%v)", res, err)
	}
	return *h.TTLMs
}

func TestReadCacheKeys(t *testing.T) {
	alice := &gateway.Principal{Subject: "alice", Scopes: []string{"b", "a"}, Claims: map[string]any{"iss": "https://idp"}}
	aliceRefreshed := &gateway.Principal{Subject: "alice", Scopes: []string{"a", "b"}, Claims: map[string]any{"iss": "https://idp", "jti": "2"}, Bearer: "other-token"}
	aliceNarrowed := &gateway.Principal{Subject: "alice", Scopes: []string{"a"}, Claims: map[string]any{"iss": "https://idp"}}
	aliceElsewhere := &gateway.Principal{Subject: "alice", Scopes: []string{"a", "b"}, Claims: map[string]any{"iss": "https://other"}}
	bob := &gateway.Principal{Subject: "bob", Scopes: []string{"a", "b"}, Claims: map[string]any{"iss": "https://idp"}}
	anon := &gateway.Principal{Subject: "anonymous", Anonymous: true}
	tests := []struct {
		name        string
		scope       string
		reader      *gateway.Principal
		hit         bool
		description string
	}{
		{"private, same principal", "private", alice, true, "the caller it was made for"},
		{"private, refreshed token", "private", aliceRefreshed, true, "issuer+subject+scopes, not token bytes"},
		{"private, fewer scopes", "private", aliceNarrowed, false, "a narrower hop token may see less"},
		{"private, other issuer", "private", aliceElsewhere, false, "the same subject at another issuer is someone else"},
		{"private, other principal", "private", bob, false, "never another caller's"},
		{"private, anonymous", "private", anon, false, "never another caller's"},
		{"absent scope is private", "", bob, false, "private by default"},
		{"unknown scope is private", "shared", bob, false, "only public is shared"},
		{"public, other principal", "public", bob, true, "the upstream said anyone"},
		{"public, anonymous", "public", anon, true, "the upstream said anyone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Unix(1000, 0)
			c := newReadCache(ReadCacheConfig{}, func() time.Time { return now })
			c.put("up", "res://a", alice, readResult("x", "60000", tt.scope))
			_, hit := c.get("up", "res://a", tt.reader)
			if hit != tt.hit {
				t.Fatalf("hit = %v, want %v (%s)", hit, tt.hit, tt.description)
			}
			if _, hit := c.get("other", "res://a", alice); hit {
				t.Fatal("a read of another upstream hit")
			}
			if _, hit := c.get("up", "res://b", alice); hit {
				t.Fatal("a read of another URI hit")
			}
		})
	}
}

func TestReadCacheTTL(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	p := &gateway.Principal{Subject: "alice"}
	tests := []struct {
		name   string
		result json.RawMessage
		stored bool
	}{
		{"no ttlMs", readResult("x", "", "private"), false},
		{"ttlMs 0", readResult("x", "0", "private"), false},
		{"negative ttlMs", readResult("x", "-5", "private"), false},
		{"ttlMs null", json.RawMessage(`{"contents":[],"ttlMs":null}`), false},
		{"not an object", json.RawMessage(`[1]`), false},
		{"1 ms", readResult("x", "1", "private"), true},
		{"a minute", readResult("x", "60000", "private"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newReadCache(ReadCacheConfig{}, clock)
			c.put("up", "res://a", p, tt.result)
			if _, hit := c.get("up", "res://a", p); hit != tt.stored {
				t.Fatalf("stored = %v, want %v", hit, tt.stored)
			}
		})
	}

	c := newReadCache(ReadCacheConfig{MaxTTL: 10 * time.Second}, clock)
	c.put("up", "res://a", p, readResult("x", "60000", "private"))
	now = now.Add(4 * time.Second)
	res, hit := c.get("up", "res://a", p)
	if !hit {
		t.Fatal("miss within the ttl")
	}
	if got := ttlOf(t, res); got != 6000 {
		t.Errorf("served ttlMs = %d, want 6000 (max_ttl 10 s caps 60 s; 4 s gone)", got)
	}
	now = now.Add(6*time.Second - time.Millisecond)
	if _, hit := c.get("up", "res://a", p); !hit {
		t.Fatal("miss 1 ms before max_ttl")
	}
	now = now.Add(time.Millisecond)
	if _, hit := c.get("up", "res://a", p); hit {
		t.Fatal("hit at max_ttl: the upstream's 60 s must be capped at 10 s")
	}
	if st := c.stats(); st.Entries != 0 || st.Evictions != 1 || st.Hits != 2 || st.Misses != 1 {
		t.Errorf("stats = %+v; want the expired entry evicted, 2 hits, 1 miss", st)
	}
}

func TestReadCacheBounds(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	p := &gateway.Principal{Subject: "alice"}
	res := readResult("x", "60000", "public")

	c := newReadCache(ReadCacheConfig{MaxEntries: 2}, clock)
	for _, uri := range []string{"res://1", "res://2"} {
		c.put("up", uri, p, res)
	}
	c.get("up", "res://1", p) // 1 is now the most recently used
	c.put("up", "res://3", p, res)
	if _, hit := c.get("up", "res://2", p); hit {
		t.Error("max_entries 2: the least recently used entry was kept")
	}
	for _, uri := range []string{"res://1", "res://3"} {
		if _, hit := c.get("up", uri, p); !hit {
			t.Errorf("max_entries 2: %s was dropped", uri)
		}
	}

	c = newReadCache(ReadCacheConfig{MaxBytes: 2 * len(res)}, clock)
	big := json.RawMessage(`{"contents":[{"uri":"res://a","text":"` + strings.Repeat("x", 2*len(res)) + `"}],"ttlMs":60000}`)
	c.put("up", "res://big", p, big)
	if st := c.stats(); st.Entries != 0 {
		t.Errorf("a result over max_bytes was stored: %+v", st)
	}
	c.put("up", "res://1", p, res)
	c.put("up", "res://2", p, res)
	if st := c.stats(); st.Entries != 2 || st.Bytes != 2*len(res) {
		t.Errorf("at max_bytes exactly: %+v, want 2 entries of %d bytes", st, 2*len(res))
	}
	c.put("up", "res://3", p, res)
	if st := c.stats(); st.Entries != 2 || st.Bytes != 2*len(res) {
		t.Errorf("one past max_bytes: %+v, want the oldest dropped", st)
	}

	if c := newReadCache(ReadCacheConfig{Enabled: new(bool)}, clock); c != nil {
		t.Error("disabled: a cache was made")
	}
	var off *readCache
	off.put("up", "res://1", p, res)
	if _, hit := off.get("up", "res://1", p); hit {
		t.Error("a disabled cache hit")
	}
	off.drop(func(*readEntry) bool { return true })
}

func TestReadCacheInvalidation(t *testing.T) {
	now := time.Unix(1000, 0)
	p := &gateway.Principal{Subject: "alice"}
	b := &Bridge{reads: newReadCache(ReadCacheConfig{}, func() time.Time { return now })}
	fill := func() {
		for _, up := range []string{"one", "two"} {
			for _, uri := range []string{"res://a", "res://b"} {
				b.reads.put(up, uri, p, readResult("x", "60000", "private"))
			}
		}
	}
	fill()
	b.resourceUpdated("one", "res://a")
	for _, c := range []struct {
		up, uri string
		hit     bool
	}{{"one", "res://a", false}, {"one", "res://b", true}, {"two", "res://a", true}} {
		if _, hit := b.reads.get(c.up, c.uri, p); hit != c.hit {
			t.Errorf("after resources/updated of one res://a: %s %s hit = %v, want %v", c.up, c.uri, hit, c.hit)
		}
	}
	b.resourcesChanged(Delta{Tools: ListDelta{Added: []string{"t"}}})
	if st := b.reads.stats(); st.Entries != 3 {
		t.Errorf("a tools-only change dropped reads: %+v", st)
	}
	b.resourcesChanged(Delta{ResourceTemplates: ListDelta{Removed: []string{"res://{x}"}}})
	if st := b.reads.stats(); st.Entries != 0 {
		t.Errorf("a template change kept reads: %+v", st)
	}
	fill()
	b.resourcesChanged(Delta{Resources: ListDelta{Changed: []string{"res://a"}}})
	if st := b.reads.stats(); st.Entries != 0 {
		t.Errorf("a resource list change kept reads: %+v", st)
	}
}

func TestReadCacheConfigValidate(t *testing.T) {
	tests := []struct {
		cfg ReadCacheConfig
		err string
	}{
		{ReadCacheConfig{}, ""},
		{ReadCacheConfig{MaxEntries: 1, MaxBytes: 1, MaxTTL: time.Millisecond}, ""},
		{ReadCacheConfig{MaxEntries: -1}, "max_entries"},
		{ReadCacheConfig{MaxBytes: -1}, "max_bytes"},
		{ReadCacheConfig{MaxTTL: -time.Second}, "max_ttl"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%+v: %v, want an error naming %q", tt.cfg, err, tt.err)
		}
	}
	d := ReadCacheConfig{}.withDefaults()
	if d.MaxEntries != DefaultReadCacheEntries || d.MaxBytes != DefaultReadCacheBytes || d.MaxTTL != DefaultReadCacheMaxTTL {
		t.Errorf("defaults = %+v", d)
	}
}
