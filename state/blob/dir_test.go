package blob_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/state/blob"
	"github.com/gatehouse-dev/gatehouse/state/blob/blobtest"
)

func TestDirContract(t *testing.T) {
	t.Parallel()
	blobtest.RunStore(t, func(t *testing.T, lim blob.Limits) blob.Store {
		s, err := blob.OpenDir(t.TempDir(), lim, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestDirStaysInsideRoot: whatever the key, every file the store writes is under its root,
// and a refused create leaves no temporary file behind.
func TestDirStaysInsideRoot(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	s, err := blob.OpenDir(root, blob.Limits{MaxObjectBytes: 8}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"a", "b/c", "../../outside", "d/../../e"} {
		_, _ = s.Create(t.Context(), key, strings.NewReader("12345678"), -1)
	}
	_, _ = s.Create(t.Context(), "big", strings.NewReader("123456789"), -1)
	entries, err := os.ReadDir(parent)
	if err != nil || len(entries) != 1 || entries[0].Name() != "root" {
		t.Fatalf("parent holds %v, %v; want only root", entries, err)
	}
	tmp, err := os.ReadDir(filepath.Join(root, "tmp"))
	if err != nil || len(tmp) != 0 {
		t.Errorf("tmp holds %v, %v; want nothing", tmp, err)
	}
}

// TestDirExpireSweepsTmp: a write cut short by a crash leaves a directory in tmp/, which
// Expire removes once it is older than the cut-off.
func TestDirExpireSweepsTmp(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s, err := blob.OpenDir(root, blob.Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	left := filepath.Join(root, "tmp", "obj-crashed")
	if err := os.MkdirAll(left, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Expire(t.Context(), time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); err != nil {
		t.Fatalf("a young leftover was removed: %v", err)
	}
	if _, err := s.Expire(t.Context(), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("an old leftover is still there: %v", err)
	}
}
