package blob

import (
	"context"
	"errors"
	"io"
	"regexp"
	"time"
)

// Errors of the stores and of URL verification. Each is returned wrapped with detail; compare
// with errors.Is.
var (
	// ErrNotFound: no object has the key.
	ErrNotFound = errors.New("blob: no such object")
	// ErrExists: an object already has the key; objects are written once.
	ErrExists = errors.New("blob: object already exists")
	// ErrTooLarge: the object is larger than the store's or the grant's limit.
	ErrTooLarge = errors.New("blob: object too large")
	// ErrRange: the byte range is outside the object, the grant or the range limit.
	ErrRange = errors.New("blob: byte range not satisfiable")
	// ErrInvalidKey: the key is not a valid object key (ValidKey).
	ErrInvalidKey = errors.New("blob: invalid object key")
	// ErrInvalidRef: the reference is not a blob reference (ParseRef).
	ErrInvalidRef = errors.New("blob: invalid reference")
	// ErrUnsigned: a URL lacks its signature parameters or has malformed ones.
	ErrUnsigned = errors.New("blob: URL is not signed")
	// ErrSignature: a URL's signature does not match its fields (a tampered or foreign URL).
	ErrSignature = errors.New("blob: URL signature does not match")
	// ErrExpired: a URL's expiry has passed.
	ErrExpired = errors.New("blob: URL has expired")
)

// Store is an object store of immutable objects under string keys. Implementations are
// safe for concurrent use.
type Store interface {
	// Create writes the object key with the bytes of r and returns its Info. size is the
	// number of bytes r yields, or -1 when unknown. A key that already names an object fails
	// with ErrExists, leaving that object as it was; more bytes than the store's
	// MaxObjectBytes fail with ErrTooLarge and leave nothing behind. On return the object is
	// either whole and readable or absent.
	Create(ctx context.Context, key string, r io.Reader, size int64) (Info, error)
	// Open returns a reader of n bytes of the object key from offset off; the caller closes
	// it. A range past the object's end or longer than MaxRangeBytes fails with ErrRange;
	// a missing object with ErrNotFound.
	Open(ctx context.Context, key string, off, n int64) (io.ReadCloser, error)
	// Stat returns the object's Info, or ErrNotFound.
	Stat(ctx context.Context, key string) (Info, error)
	// Delete removes the object key; removing a missing object is not an error.
	Delete(ctx context.Context, key string) error
	// Expire removes every object created before the instant before and returns how many
	// it removed.
	Expire(ctx context.Context, before time.Time) (int, error)
	// Limits returns the store's limits.
	Limits() Limits
}

// Info describes one object.
type Info struct {
	// Key is the object's key.
	Key string
	// Size is its length in bytes.
	Size int64
	// SHA256 is the lowercase hex SHA-256 of its bytes.
	SHA256 string
	// Created is when it was written.
	Created time.Time
}

// Limits bound what a store accepts.
type Limits struct {
	// MaxObjectBytes bounds one object (default DefaultMaxObjectBytes).
	MaxObjectBytes int64
	// MaxRangeBytes bounds one read (default DefaultMaxRangeBytes).
	MaxRangeBytes int64
}

// Default limits.
const (
	DefaultMaxObjectBytes = 64 << 20
	DefaultMaxRangeBytes  = 64 << 20
)

// WithDefaults returns l with each zero limit set to its default.
func (l Limits) WithDefaults() Limits {
	if l.MaxObjectBytes == 0 {
		l.MaxObjectBytes = DefaultMaxObjectBytes
	}
	if l.MaxRangeBytes == 0 {
		l.MaxRangeBytes = DefaultMaxRangeBytes
	}
	return l
}

// MaxKeyBytes bounds the length of an object key.
const MaxKeyBytes = 256

// keyPattern is the syntax of an object key: segments of letters, digits, '.', '_' and
// '-' separated by '/', each starting with a letter or digit (so no segment is "." or ".."
// and no key is absolute).
var keyPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)*$`)

// ValidKey reports whether key is a valid object key: at most MaxKeyBytes bytes of
// '/'-separated segments of letters, digits, '.', '_' and '-', each starting with a letter
// or a digit.
func ValidKey(key string) bool {
	return len(key) <= MaxKeyBytes && keyPattern.MatchString(key)
}

// checkRange validates a read of n bytes at off of an object of size bytes under lim.
func checkRange(off, n, size int64, lim Limits) error {
	switch {
	case off < 0 || n < 0:
		return errorsJoin(ErrRange, "negative offset or length")
	case n > lim.MaxRangeBytes:
		return errorsJoin(ErrRange, "longer than max_range_bytes")
	case off > size || n > size-off:
		return errorsJoin(ErrRange, "past the end of the object")
	}
	return nil
}

// errorsJoin wraps sentinel with a detail.
func errorsJoin(sentinel error, detail string) error {
	return &detailError{sentinel: sentinel, detail: detail}
}

// detailError is a sentinel error with a detail, matching the sentinel under errors.Is.
type detailError struct {
	sentinel error
	detail   string
}

func (e *detailError) Error() string { return e.sentinel.Error() + ": " + e.detail }
func (e *detailError) Unwrap() error { return e.sentinel }
