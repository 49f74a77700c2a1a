package state

import (
	"fmt"
	"time"
)

// CheckInvariants reports the first way e's shards disagree with each other or with its
// count: every entry in its map and its heap at its index, the heap ordered on expiry.
func CheckInvariants(e *Embedded) error {
	total := 0
	for i := range e.shards {
		s := &e.shards[i]
		s.mu.Lock()
		err := s.check()
		total += len(s.entries)
		s.mu.Unlock()
		if err != nil {
			return fmt.Errorf("shard %d: %w", i, err)
		}
	}
	if n := e.Len(); n != total {
		return fmt.Errorf("Len() = %d, but the shards hold %d entries", n, total)
	}
	if int64(total) > e.maxEntries {
		return fmt.Errorf("%d entries, more than MaxEntries %d", total, e.maxEntries)
	}
	return nil
}

func (s *shard) check() error {
	if len(s.entries) != len(s.heap) {
		return fmt.Errorf("map holds %d entries, heap %d", len(s.entries), len(s.heap))
	}
	for i, en := range s.heap {
		switch {
		case en.index != i:
			return fmt.Errorf("heap[%d].index = %d", i, en.index)
		case s.entries[en.key] != en:
			return fmt.Errorf("heap[%d] (%q) is not the map's entry", i, en.key)
		case i > 0 && s.heap[(i-1)/2].expires > en.expires:
			return fmt.Errorf("heap[%d] expires before its parent", i)
		}
	}
	return nil
}

// SetBusHealthInterval sets how long r's later subscriptions wait idle before they PING,
// and then for the answer.
func SetBusHealthInterval(r *Redis, d time.Duration) { r.busHealth = d }
