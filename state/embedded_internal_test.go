package state

import (
	"math"
	"testing"
)

func TestDeadlineSaturates(t *testing.T) {
	if got := deadline(math.MaxInt64-5, 10); got != math.MaxInt64 {
		t.Errorf("deadline near the end of time = %d, want MaxInt64", got)
	}
	if got := deadline(5, 10); got != 15 {
		t.Errorf("deadline(5, 10) = %d, want 15", got)
	}
}

func TestOverwriteReusesOnlyFittingBuffers(t *testing.T) {
	buf := make([]byte, 8, 16)
	if got := overwrite(buf, []byte("abcdef")); &got[0] != &buf[0] || string(got) != "abcdef" {
		t.Errorf("overwrite into a fitting buffer = %q, reused %v; want reuse", got, &got[0] == &buf[0])
	}
	if got := overwrite(buf, make([]byte, 17)); &got[0] == &buf[0] {
		t.Errorf("overwrite with a longer value reused a too-small buffer")
	}
	big := make([]byte, 0, 1<<20)
	if got := overwrite(big, []byte("x")); cap(got) == cap(big) {
		t.Errorf("overwrite kept a 1 MiB buffer for a 1-byte value")
	}
	if got := overwrite(nil, nil); got == nil {
		t.Errorf("overwrite(nil, nil) = nil, want non-nil empty")
	}
}
