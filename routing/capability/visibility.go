package capability

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// view is what one caller may see of a snapshot: shown[i] tells whether s.entries[i] is
// visible, and key fingerprints the hidden ids for cursors. A nil view shows everything.
type view struct {
	shown []bool
	key   string
}

// viewOf asks visible about every entry of s; nil when visible is nil or shows them all,
// so a caller who may see everything gets the same results and cursors as no filter.
func (s *snapshot) viewOf(visible func(Capability) bool) *view {
	if visible == nil {
		return nil
	}
	shown := make([]bool, len(s.entries))
	h := sha256.New()
	hidden := false
	for i, e := range s.entries {
		if shown[i] = visible(e.Capability); !shown[i] {
			hidden = true
			h.Write([]byte(e.ID))
			h.Write([]byte{0})
		}
	}
	if !hidden {
		return nil
	}
	return &view{shown: shown, key: hex.EncodeToString(h.Sum(nil))[:8]}
}

// shows reports whether the entry at index i is visible.
func (v *view) shows(i int) bool { return v == nil || v.shown[i] }

// fingerprint is the view's part of a cursor's filter key: "" for a view of everything.
func (v *view) fingerprint() string {
	if v == nil {
		return ""
	}
	return v.key
}

// visibleEntries returns the entries v shows, in id order.
func (s *snapshot) visibleEntries(v *view) []*entry {
	if v == nil {
		return s.entries
	}
	out := make([]*entry, 0, len(s.entries))
	for i, e := range s.entries {
		if v.shown[i] {
			out = append(out, e)
		}
	}
	return out
}

// indexOf returns the index in s.entries of the entry with id, -1 when there is none.
func (s *snapshot) indexOf(id string) int {
	i, ok := slices.BinarySearchFunc(s.entries, id, func(e *entry, id string) int { return strings.Compare(e.ID, id) })
	if !ok {
		return -1
	}
	return i
}
