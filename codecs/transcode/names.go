package transcode

import "math/bits"

// nameTable maps names to small integers without allocating on lookup: an open-addressed
// table whose hash reads four bytes of the name, with a multiplier chosen at compile time
// to keep probe sequences short.
type nameTable struct {
	slots []nameSlot
	shift uint32
	mul   uint32
}

type nameSlot struct {
	name string
	val  int32 // -1 marks an empty slot
}

// nameMultipliers are the odd constants tried for the hash, best first.
var nameMultipliers = [...]uint32{
	0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F, 0x165667B1, 0xD3A2646C | 1,
	0xFD7046C5, 0xB55A4F09, 0x68E31DA4 | 1, 0x1B873593, 0xCC9E2D51, 0xE6546B64 | 1,
}

// newNameTable builds a table mapping names[i] to vals[i]; earlier names win.
func newNameTable(names []string, vals []int32) nameTable {
	size := 4
	for size < 2*len(names) {
		size <<= 1
	}
	shift := hash32(32 - bits.TrailingZeros(uint(size)))
	var best nameTable
	bestProbe := -1
	for _, mul := range nameMultipliers {
		t := nameTable{slots: make([]nameSlot, size), shift: shift, mul: mul}
		for i := range t.slots {
			t.slots[i].val = -1
		}
		worst := 0
		for i, n := range names {
			if t.lookup(n) >= 0 {
				continue
			}
			worst = max(worst, t.insert(n, vals[i]))
		}
		if bestProbe < 0 || worst < bestProbe {
			best, bestProbe = t, worst
		}
		if worst == 0 {
			break
		}
	}
	return best
}

// hashName hashes the length and three bytes of name.
func hashName[S ~string | ~[]byte](name S) uint32 {
	n := len(name)
	if n == 0 {
		return 0
	}
	return hash32(n) | uint32(name[0])<<8 | uint32(name[n-1])<<16 | uint32(name[n>>1])<<24
}

// insert adds name and returns how many slots it probed past its home.
func (t *nameTable) insert(name string, val int32) int {
	mask := hash32(len(t.slots) - 1)
	i := (hashName(name) * t.mul) >> t.shift
	for p := 0; ; p++ {
		if t.slots[i].val < 0 {
			t.slots[i] = nameSlot{name: name, val: val}
			return p
		}
		i = (i + 1) & mask
	}
}

// lookup returns the value of name, or -1.
func (t *nameTable) lookup(name string) int32 { return lookupName(t, name) }

// lookupBytes returns the value of name, or -1.
func (t *nameTable) lookupBytes(name []byte) int32 { return lookupName(t, name) }

func lookupName[S ~string | ~[]byte](t *nameTable, name S) int32 {
	if len(t.slots) == 0 {
		return -1
	}
	mask := hash32(len(t.slots) - 1)
	i := (hashName(name) * t.mul) >> t.shift
	for {
		s := &t.slots[i]
		if s.val < 0 {
			return -1
		}
		if s.name == string(name) {
			return s.val
		}
		i = (i + 1) & mask
	}
}
