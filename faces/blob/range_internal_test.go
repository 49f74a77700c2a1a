package blobface

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/state/blob"
)

// FuzzRequestedRange: whatever the Range header, an accepted range lies within the grant and
// the object.
func FuzzRequestedRange(f *testing.F) {
	for _, h := range []string{"", "bytes=0-0", "bytes=5-", "bytes=-3", "bytes=1-2,3-4", "bytes=9-1", "bytes=+1-2", "bytes= 1-2"} {
		f.Add(h, int64(2), int64(5), int64(10))
	}
	f.Fuzz(func(t *testing.T, header string, off, n, size int64) {
		if off < 0 || n < 0 || size < 0 || off > size || n > size-off {
			t.Skip()
		}
		g := blob.Grant{Offset: off, Length: n}
		a, k, err := requestedRange(header, g, size)
		if err != nil {
			return
		}
		if a < off || k < 0 || a+k > off+n || a+k > size {
			t.Fatalf("requestedRange(%q, [%d,+%d), %d) = %d,+%d: outside the grant or the object", header, off, n, size, a, k)
		}
	})
}
