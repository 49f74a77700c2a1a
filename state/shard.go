package state

import (
	"sync"
	"sync/atomic"
)

// entry is one stored value. Its value is owned by the store and never handed out.
type entry struct {
	key   string
	value []byte
	// expires is when the entry dies, in nanoseconds on the store's clock (see
	// Embedded.tick): the entry is live while now < expires.
	expires int64
	// index is the entry's position in its shard's expiry heap.
	index int
}

// shard is one lock's worth of the embedded store: a map for lookups and a min-heap on
// expiry for sweeping, always holding the same entries.
type shard struct {
	mu      sync.Mutex
	entries map[string]*entry // nil once the store is closed
	heap    []*entry          // min-heap on expires
	count   *atomic.Int64     // the store's entry count, shared by every shard
	_       [64]byte          // keeps neighbouring shards' locks off one cache line
}

// closed reports whether the store was closed. Callers hold s.mu.
func (s *shard) closed() bool { return s.entries == nil }

// live returns key's entry if it is live at now. An expired entry found on the way is
// removed. Callers hold s.mu.
func (s *shard) live(key string, now int64) *entry {
	e := s.entries[key]
	if e == nil {
		return nil
	}
	if e.expires <= now {
		s.remove(e)
		return nil
	}
	return e
}

// add stores a new entry, which must not be in the shard. The caller has reserved its
// place in the store's count. Callers hold s.mu.
func (s *shard) add(e *entry) {
	s.entries[e.key] = e
	e.index = len(s.heap)
	s.heap = append(s.heap, e)
	s.up(e.index)
}

// remove drops e from the shard and the store's count. Callers hold s.mu.
func (s *shard) remove(e *entry) {
	delete(s.entries, e.key)
	last := len(s.heap) - 1
	i := e.index
	if i != last {
		s.swap(i, last)
	}
	s.heap[last] = nil
	s.heap = s.heap[:last]
	if i != last {
		s.fix(i)
	}
	s.count.Add(-1)
}

// setExpiry moves e to its new place in the heap. Callers hold s.mu.
func (s *shard) setExpiry(e *entry, expires int64) {
	if e.expires == expires {
		return
	}
	e.expires = expires
	s.fix(e.index)
}

// sweep removes at most limit entries expired at now and returns how many it removed.
// Callers hold s.mu.
func (s *shard) sweep(now int64, limit int) int {
	n := 0
	for n < limit && len(s.heap) > 0 && s.heap[0].expires <= now {
		s.remove(s.heap[0])
		n++
	}
	return n
}

// drop forgets every entry and marks the shard closed.
func (s *shard) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = nil
	s.heap = nil
}

func (s *shard) fix(i int) {
	if !s.down(i) {
		s.up(i)
	}
}

func (s *shard) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if s.heap[parent].expires <= s.heap[i].expires {
			return
		}
		s.swap(i, parent)
		i = parent
	}
}

// down sifts the element at i down and reports whether it moved.
func (s *shard) down(i int) bool {
	start, n := i, len(s.heap)
	for {
		child := 2*i + 1
		if child >= n {
			break
		}
		if right := child + 1; right < n && s.heap[right].expires < s.heap[child].expires {
			child = right
		}
		if s.heap[i].expires <= s.heap[child].expires {
			break
		}
		s.swap(i, child)
		i = child
	}
	return i > start
}

func (s *shard) swap(i, j int) {
	s.heap[i], s.heap[j] = s.heap[j], s.heap[i]
	s.heap[i].index = i
	s.heap[j].index = j
}
