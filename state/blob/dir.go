package blob

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Dir is the local-directory store. Under its root, objects/ holds one directory per
// object, named by the SHA-256 of its key (so no key can name a path outside the root),
// with the bytes in "data" and the Info in "meta"; tmp/ holds objects being written.
type Dir struct {
	root string
	lim  Limits
	now  func() time.Time
}

var _ Store = (*Dir)(nil)

// Names inside the root and inside an object's directory.
const (
	dirObjects = "objects"
	dirTmp     = "tmp"
	fileData   = "data"
	fileMeta   = "meta"
)

// OpenDir returns the store rooted at root, creating it (mode 0700) when missing. now is
// the clock (nil: time.Now).
func OpenDir(root string, lim Limits, now func() time.Time) (*Dir, error) {
	if root == "" {
		return nil, errors.New("blob: dir store: no directory")
	}
	if now == nil {
		now = time.Now
	}
	for _, d := range []string{dirObjects, dirTmp} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			return nil, fmt.Errorf("blob: dir store: %w", err)
		}
	}
	return &Dir{root: root, lim: lim.WithDefaults(), now: now}, nil
}

// Limits returns the store's limits.
func (d *Dir) Limits() Limits { return d.lim }

// objectDir returns the directory of the object key.
func (d *Dir) objectDir(key string) string {
	sum := sha256.Sum256([]byte(key))
	name := hex.EncodeToString(sum[:])
	return filepath.Join(d.root, dirObjects, name[:2], name)
}

// Create writes the object into a temporary directory and renames that into place: the
// rename fails when the object's directory exists and is not empty, so the first writer
// wins and a second one gets ErrExists.
func (d *Dir) Create(ctx context.Context, key string, r io.Reader, size int64) (Info, error) {
	if !ValidKey(key) {
		return Info{}, ErrInvalidKey
	}
	if size > d.lim.MaxObjectBytes {
		return Info{}, errorsJoin(ErrTooLarge, "larger than max_object_bytes")
	}
	final := d.objectDir(key)
	if _, err := os.Stat(final); err == nil {
		return Info{}, ErrExists
	}
	tmp, err := os.MkdirTemp(filepath.Join(d.root, dirTmp), "obj-")
	if err != nil {
		return Info{}, fmt.Errorf("blob: dir store: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }() // nothing left once renamed
	info, err := d.writeObject(ctx, tmp, key, r, size)
	if err != nil {
		return Info{}, err
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o700); err != nil {
		return Info{}, fmt.Errorf("blob: dir store: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		if errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.ENOTEMPTY) {
			return Info{}, ErrExists
		}
		return Info{}, fmt.Errorf("blob: dir store: %w", err)
	}
	return info, nil
}

// writeObject writes data and meta of the object into dir.
func (d *Dir) writeObject(ctx context.Context, dir, key string, r io.Reader, size int64) (Info, error) {
	f, err := os.OpenFile(filepath.Join(dir, fileData), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return Info{}, fmt.Errorf("blob: dir store: %w", err)
	}
	n, sum, err := copyLimited(ctx, f, r, size, d.lim.MaxObjectBytes)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("blob: dir store: %w", cerr)
	}
	if err != nil {
		return Info{}, err
	}
	info := Info{Key: key, Size: n, SHA256: sum, Created: d.now().UTC()}
	meta, err := json.Marshal(dirMeta(info))
	if err != nil {
		return Info{}, fmt.Errorf("blob: dir store: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, fileMeta), meta, 0o600); err != nil {
		return Info{}, fmt.Errorf("blob: dir store: %w", err)
	}
	return info, nil
}

// dirMeta is the meta file of an object.
type dirMeta struct {
	Key     string    `json:"key"`
	Size    int64     `json:"size"`
	SHA256  string    `json:"sha256"`
	Created time.Time `json:"created"`
}

// Open opens the object's data at off.
func (d *Dir) Open(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	info, err := d.Stat(ctx, key)
	if err != nil {
		return nil, err
	}
	if err := checkRange(off, n, info.Size, d.lim); err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(d.objectDir(key), fileData))
	if err != nil {
		return nil, d.pathError(err)
	}
	return &sectionCloser{Reader: io.NewSectionReader(f, off, n), c: f}, nil
}

// sectionCloser reads a section of a file and closes the file.
type sectionCloser struct {
	io.Reader
	c io.Closer
}

func (s *sectionCloser) Close() error { return s.c.Close() }

// Stat reads the object's meta file.
func (d *Dir) Stat(_ context.Context, key string) (Info, error) {
	if !ValidKey(key) {
		return Info{}, ErrInvalidKey
	}
	return d.readMeta(d.objectDir(key))
}

// readMeta reads the meta file of the object directory dir.
func (d *Dir) readMeta(dir string) (Info, error) {
	raw, err := os.ReadFile(filepath.Join(dir, fileMeta))
	if err != nil {
		return Info{}, d.pathError(err)
	}
	var m dirMeta
	if err := json.Unmarshal(raw, &m); err != nil {
		return Info{}, fmt.Errorf("blob: dir store: corrupt meta of %s: %w", dir, err)
	}
	return Info(m), nil
}

// pathError maps a missing file to ErrNotFound.
func (d *Dir) pathError(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return ErrNotFound
	}
	return fmt.Errorf("blob: dir store: %w", err)
}

// Delete removes the object's directory: renamed aside first, so that a reader of its meta
// never sees half an object, then removed.
func (d *Dir) Delete(_ context.Context, key string) error {
	if !ValidKey(key) {
		return ErrInvalidKey
	}
	return d.remove(d.objectDir(key))
}

// remove removes the object directory dir, if present.
func (d *Dir) remove(dir string) error {
	aside, err := os.MkdirTemp(filepath.Join(d.root, dirTmp), "del-")
	if err != nil {
		return fmt.Errorf("blob: dir store: %w", err)
	}
	defer func() { _ = os.RemoveAll(aside) }()
	if err := os.Rename(dir, filepath.Join(aside, "obj")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("blob: dir store: %w", err)
	}
	return nil
}

// Expire walks the objects and removes those created before before, and the leftovers in
// tmp/ of writes cut short (a crash) older than before.
func (d *Dir) Expire(ctx context.Context, before time.Time) (int, error) {
	d.sweepTmp(before)
	shards, err := os.ReadDir(filepath.Join(d.root, dirObjects))
	if err != nil {
		return 0, fmt.Errorf("blob: dir store: %w", err)
	}
	removed := 0
	for _, shard := range shards {
		objs, err := os.ReadDir(filepath.Join(d.root, dirObjects, shard.Name()))
		if err != nil {
			return removed, fmt.Errorf("blob: dir store: %w", err)
		}
		for _, o := range objs {
			if err := ctx.Err(); err != nil {
				return removed, err
			}
			dir := filepath.Join(d.root, dirObjects, shard.Name(), o.Name())
			info, err := d.readMeta(dir)
			if err != nil || !info.Created.Before(before) {
				continue // removed meanwhile, or still young
			}
			if err := d.remove(dir); err != nil {
				return removed, err
			}
			removed++
		}
	}
	return removed, nil
}

// sweepTmp removes the entries of tmp/ last modified before before: writes and deletes in
// progress are younger than any sensible expiry.
func (d *Dir) sweepTmp(before time.Time) {
	entries, err := os.ReadDir(filepath.Join(d.root, dirTmp))
	if err != nil {
		return
	}
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && fi.ModTime().Before(before) {
			_ = os.RemoveAll(filepath.Join(d.root, dirTmp, e.Name()))
		}
	}
}

// copyLimited copies r into w, at most max bytes (one more fails with ErrTooLarge), and
// exactly size bytes when size is not -1. It returns the count and the hex SHA-256.
func copyLimited(ctx context.Context, w io.Writer, r io.Reader, size, maxBytes int64) (int64, string, error) {
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), &ctxReader{ctx: ctx, r: io.LimitReader(r, maxBytes+1)})
	switch {
	case err != nil:
		return n, "", fmt.Errorf("blob: reading the object: %w", err)
	case n > maxBytes:
		return n, "", errorsJoin(ErrTooLarge, "larger than max_object_bytes")
	case size >= 0 && n != size:
		return n, "", fmt.Errorf("blob: the object has %d bytes, %d were announced", n, size)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// ctxReader stops reading once ctx is done.
type ctxReader struct {
	ctx context.Context //nolint:containedctx // bounds one copy, which owns it
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
