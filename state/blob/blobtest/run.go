// Package blobtest is the contract suite of [blob.Store]: every store, the local directory
// and the S3-compatible object store alike, must pass [RunStore] unchanged.
//
// It imports only state/blob.
package blobtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/state/blob"
)

// Limits are the limits every store under test is opened with.
var Limits = blob.Limits{MaxObjectBytes: 1024, MaxRangeBytes: 512}

// testCase is one rule of the contract, run against a fresh store.
type testCase struct {
	name string
	run  func(t *testing.T, ctx context.Context, s blob.Store)
}

// RunStore runs the contract suite, one parallel subtest per rule, each against a store that
// open returns for Limits. Stores of separate calls must not see each other's objects.
func RunStore(t *testing.T, open func(t *testing.T, lim blob.Limits) blob.Store) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, t.Context(), open(t, Limits))
		})
	}
}

var cases = []testCase{
	{"create then stat and read", createStatRead},
	{"empty object", emptyObject},
	{"written once", writtenOnce},
	{"concurrent creates: one wins", concurrentCreates},
	{"size limit at the edge", sizeLimit},
	{"announced size must match", sizeMismatch},
	{"ranges", ranges},
	{"missing object", missing},
	{"invalid keys", invalidKeys},
	{"delete", deleteObject},
	{"expire", expire},
}

// sum is the hex SHA-256 of b.
func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// readAll reads n bytes at off of key.
func readAll(t *testing.T, ctx context.Context, s blob.Store, key string, off, n int64) ([]byte, error) {
	t.Helper()
	rc, err := s.Open(ctx, key, off, n)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rc.Close() }()
	return io.ReadAll(rc)
}

func mustCreate(t *testing.T, ctx context.Context, s blob.Store, key string, data []byte, size int64) blob.Info {
	t.Helper()
	info, err := s.Create(ctx, key, bytes.NewReader(data), size)
	if err != nil {
		t.Fatalf("Create(%q): %v", key, err)
	}
	return info
}

func createStatRead(t *testing.T, ctx context.Context, s blob.Store) {
	data := []byte("hello, immutable world")
	for _, size := range []int64{int64(len(data)), -1} {
		key := "jobs/j1/in-" + map[bool]string{true: "known", false: "unknown"}[size >= 0]
		before := time.Now().Add(-time.Minute)
		info := mustCreate(t, ctx, s, key, data, size)
		if info.Key != key || info.Size != int64(len(data)) || info.SHA256 != sum(data) || info.Created.Before(before) {
			t.Errorf("Create info = %+v; want key %q, size %d, sha256 %s", info, key, len(data), sum(data))
		}
		st, err := s.Stat(ctx, key)
		if err != nil || st.Size != info.Size || st.SHA256 != info.SHA256 || st.Key != key {
			t.Errorf("Stat = %+v, %v; want %+v", st, err, info)
		}
		got, err := readAll(t, ctx, s, key, 0, int64(len(data)))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("Open whole = %q, %v; want %q", got, err, data)
		}
	}
}

func emptyObject(t *testing.T, ctx context.Context, s blob.Store) {
	info := mustCreate(t, ctx, s, "empty", nil, 0)
	if info.Size != 0 || info.SHA256 != sum(nil) {
		t.Errorf("info = %+v; want size 0, sha256 of nothing", info)
	}
	got, err := readAll(t, ctx, s, "empty", 0, 0)
	if err != nil || len(got) != 0 {
		t.Errorf("Open = %q, %v; want nothing", got, err)
	}
}

func writtenOnce(t *testing.T, ctx context.Context, s blob.Store) {
	mustCreate(t, ctx, s, "once", []byte("first"), 5)
	for _, size := range []int64{6, -1} {
		if _, err := s.Create(ctx, "once", strings.NewReader("second"), size); !errors.Is(err, blob.ErrExists) {
			t.Errorf("second Create (size %d) = %v; want ErrExists", size, err)
		}
	}
	got, err := readAll(t, ctx, s, "once", 0, 5)
	if err != nil || string(got) != "first" {
		t.Errorf("after a refused overwrite: %q, %v; want %q", got, err, "first")
	}
}

func concurrentCreates(t *testing.T, ctx context.Context, s blob.Store) {
	const letters = "abcdefgh"
	writers := len(letters)
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() {
			_, errs[i] = s.Create(ctx, "race", bytes.NewReader(bytes.Repeat([]byte{letters[i]}, 100)), 100)
		})
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Fatalf("writers %d and %d both created the key", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, blob.ErrExists):
			t.Errorf("writer %d: %v; want nil or ErrExists", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no writer created the key")
	}
	got, err := readAll(t, ctx, s, "race", 0, 100)
	if err != nil || !bytes.Equal(got, bytes.Repeat([]byte{letters[won]}, 100)) {
		t.Errorf("object = %q, %v; want the winner's bytes", got, err)
	}
}

func sizeLimit(t *testing.T, ctx context.Context, s blob.Store) {
	maxBytes := s.Limits().MaxObjectBytes
	if maxBytes != Limits.MaxObjectBytes {
		t.Fatalf("Limits().MaxObjectBytes = %d; want %d", maxBytes, Limits.MaxObjectBytes)
	}
	tests := []struct {
		name    string
		n, size int64
		wantErr error
	}{
		{"exactly max, size known", maxBytes, maxBytes, nil},
		{"exactly max, size unknown", maxBytes, -1, nil},
		{"max+1, size known", maxBytes + 1, maxBytes + 1, blob.ErrTooLarge},
		{"max+1, size unknown", maxBytes + 1, -1, blob.ErrTooLarge},
		{"max+1, size understated", maxBytes + 1, maxBytes, blob.ErrTooLarge},
	}
	for i, tt := range tests {
		key := "limit/" + string(rune('a'+i))
		_, err := s.Create(ctx, key, bytes.NewReader(bytes.Repeat([]byte("x"), int(tt.n))), tt.size)
		if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
			t.Errorf("%s: Create = %v; want %v", tt.name, err, tt.wantErr)
		}
		_, statErr := s.Stat(ctx, key)
		if tt.wantErr != nil && !errors.Is(statErr, blob.ErrNotFound) {
			t.Errorf("%s: refused object left behind: Stat = %v", tt.name, statErr)
		}
	}
}

func sizeMismatch(t *testing.T, ctx context.Context, s blob.Store) {
	if _, err := s.Create(ctx, "short", strings.NewReader("abc"), 10); err == nil {
		t.Error("Create with 3 of 10 announced bytes succeeded")
	}
	if _, err := s.Stat(ctx, "short"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("a short object was left behind: Stat = %v", err)
	}
}

func ranges(t *testing.T, ctx context.Context, s blob.Store) {
	data := bytes.Repeat([]byte("0123456789"), 80) // 800 bytes, more than MaxRangeBytes
	mustCreate(t, ctx, s, "ranged", data, int64(len(data)))
	maxRange := s.Limits().MaxRangeBytes
	tests := []struct {
		name    string
		off, n  int64
		wantErr error
	}{
		{"start", 0, 10, nil},
		{"middle", 123, 45, nil},
		{"last byte", 799, 1, nil},
		{"empty at the end", 800, 0, nil},
		{"exactly max range", 100, maxRange, nil},
		{"max range + 1", 100, maxRange + 1, blob.ErrRange},
		{"past the end", 790, 11, blob.ErrRange},
		{"offset past the end", 801, 0, blob.ErrRange},
		{"negative offset", -1, 5, blob.ErrRange},
	}
	for _, tt := range tests {
		got, err := readAll(t, ctx, s, "ranged", tt.off, tt.n)
		if tt.wantErr != nil {
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("%s: Open(%d, %d) = %v; want %v", tt.name, tt.off, tt.n, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, data[tt.off:tt.off+tt.n]) {
			t.Errorf("%s: Open(%d, %d) = %q, %v; want %q", tt.name, tt.off, tt.n, got, err, data[tt.off:tt.off+tt.n])
		}
	}
}

func missing(t *testing.T, ctx context.Context, s blob.Store) {
	if _, err := s.Stat(ctx, "nope"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Stat = %v; want ErrNotFound", err)
	}
	if _, err := s.Open(ctx, "nope", 0, 0); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Open = %v; want ErrNotFound", err)
	}
}

func invalidKeys(t *testing.T, ctx context.Context, s blob.Store) {
	for _, key := range []string{
		"", "../escape", "a/../../b", "/abs", "a//b", "a/", ".hidden", "a/./b", "a\\b", "a\x00b",
		"sp ace", "ü", strings.Repeat("k", blob.MaxKeyBytes+1),
	} {
		if _, err := s.Create(ctx, key, strings.NewReader("x"), 1); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Create(%q) = %v; want ErrInvalidKey", key, err)
		}
		if _, err := s.Stat(ctx, key); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Stat(%q) = %v; want ErrInvalidKey", key, err)
		}
		if _, err := s.Open(ctx, key, 0, 0); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Open(%q) = %v; want ErrInvalidKey", key, err)
		}
		if err := s.Delete(ctx, key); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Delete(%q) = %v; want ErrInvalidKey", key, err)
		}
	}
	if _, err := s.Create(ctx, strings.Repeat("k", blob.MaxKeyBytes), strings.NewReader("x"), 1); err != nil {
		t.Errorf("Create of a key of MaxKeyBytes: %v", err)
	}
}

func deleteObject(t *testing.T, ctx context.Context, s blob.Store) {
	mustCreate(t, ctx, s, "gone", []byte("bytes"), 5)
	if err := s.Delete(ctx, "gone"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Stat(ctx, "gone"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Stat after Delete = %v; want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "gone"); err != nil {
		t.Errorf("Delete of a missing object = %v; want nil", err)
	}
	// The job is over: the key may be written anew.
	mustCreate(t, ctx, s, "gone", []byte("again"), 5)
}

func expire(t *testing.T, ctx context.Context, s blob.Store) {
	mustCreate(t, ctx, s, "old/a", []byte("a"), 1)
	mustCreate(t, ctx, s, "old/b", []byte("b"), 1)
	if n, err := s.Expire(ctx, time.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Errorf("Expire(an hour ago) = %d, %v; want 0 removed", n, err)
	}
	if _, err := s.Stat(ctx, "old/a"); err != nil {
		t.Errorf("young object gone: %v", err)
	}
	if n, err := s.Expire(ctx, time.Now().Add(time.Hour)); err != nil || n != 2 {
		t.Errorf("Expire(in an hour) = %d, %v; want 2 removed", n, err)
	}
	for _, key := range []string{"old/a", "old/b"} {
		if _, err := s.Stat(ctx, key); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Stat(%q) after Expire = %v; want ErrNotFound", key, err)
		}
	}
}
