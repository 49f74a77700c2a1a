package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3 is the store over an S3-compatible object store (AWS S3, MinIO, Ceph RGW, …) through
// minio-go. Every object lives under Prefix in one bucket, which must exist; its SHA-256 is
// kept as user metadata (x-amz-meta-sha256).
type S3 struct {
	client *minio.Client
	bucket string
	prefix string
	spool  string
	lim    Limits
}

var (
	_ Store     = (*S3)(nil)
	_ Presigner = (*S3)(nil)
)

// Presigner is an optional interface of a store whose objects can be read straight from the
// object store through a presigned URL, without the gateway in the path.
type Presigner interface {
	// PresignGet returns a URL that GETs n bytes of the object key from off until ttl
	// passes. When the range is not the whole object, the URL is signed with a Range
	// header that the reader must send exactly.
	PresignGet(ctx context.Context, key string, off, n int64, whole bool, ttl time.Duration) (string, error)
}

// S3Options are the connection settings of an S3 store.
type S3Options struct {
	// Endpoint is the host[:port] of the object store.
	Endpoint string
	// Bucket is the bucket the objects live in; it must exist.
	Bucket string
	// Region is the bucket's region ("" lets the client find it).
	Region string
	// AccessKey and SecretKey are the static credentials.
	AccessKey, SecretKey string
	// Secure speaks HTTPS to the endpoint.
	Secure bool
	// Prefix is prepended to every key ("gatehouse/" keeps the bucket shareable).
	Prefix string
	// SpoolDir holds an object being created while its SHA-256 is computed, before it is
	// sent with its size and hash ("" for the system's temporary directory).
	SpoolDir string
	// Transport is the HTTP transport; nil for the client's default.
	Transport http.RoundTripper
}

// metaSHA256 is the user metadata key of an object's SHA-256.
const metaSHA256 = "sha256"

// OpenS3 returns the store opts describe. It does not contact the object store: calls fail
// while it cannot be reached.
func OpenS3(opts S3Options, lim Limits) (*S3, error) {
	if opts.Endpoint == "" || opts.Bucket == "" {
		return nil, errors.New("blob: s3 store: endpoint and bucket are required")
	}
	c, err := minio.New(opts.Endpoint, &minio.Options{
		Creds:     credentials.NewStaticV4(opts.AccessKey, opts.SecretKey, ""),
		Secure:    opts.Secure,
		Region:    opts.Region,
		Transport: opts.Transport,
	})
	if err != nil {
		return nil, fmt.Errorf("blob: s3 store: %w", err)
	}
	spool := opts.SpoolDir
	if spool == "" {
		spool = os.TempDir()
	}
	return &S3{client: c, bucket: opts.Bucket, prefix: opts.Prefix, spool: spool, lim: lim.WithDefaults()}, nil
}

// Limits returns the store's limits.
func (s *S3) Limits() Limits { return s.lim }

// Create spools the object to a temporary file while hashing it, then sends it with its
// size and SHA-256 and If-None-Match: *, so that the object store refuses a key that exists.
func (s *S3) Create(ctx context.Context, key string, r io.Reader, size int64) (Info, error) {
	if !ValidKey(key) {
		return Info{}, ErrInvalidKey
	}
	if size > s.lim.MaxObjectBytes {
		return Info{}, errorsJoin(ErrTooLarge, "larger than max_object_bytes")
	}
	if _, err := s.Stat(ctx, key); err == nil {
		return Info{}, ErrExists
	} else if !errors.Is(err, ErrNotFound) {
		return Info{}, err
	}
	f, err := os.CreateTemp(s.spool, "gatehouse-blob-")
	if err != nil {
		return Info{}, fmt.Errorf("blob: s3 store: spooling: %w", err)
	}
	defer func() { _ = f.Close(); _ = os.Remove(f.Name()) }()
	n, sum, err := copyLimited(ctx, f, r, size, s.lim.MaxObjectBytes)
	if err != nil {
		return Info{}, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Info{}, fmt.Errorf("blob: s3 store: spooling: %w", err)
	}
	opts := minio.PutObjectOptions{UserMetadata: map[string]string{metaSHA256: sum}, ContentType: "application/octet-stream"}
	opts.SetMatchETagExcept("*")
	// An empty object signed as a stream goes out chunked, without the Content-Length
	// some servers require; there is no payload to protect.
	opts.DisableContentSha256 = n == 0
	up, err := s.client.PutObject(ctx, s.bucket, s.prefix+key, f, n, opts)
	if err != nil {
		return Info{}, s.mapError(err)
	}
	created := up.LastModified
	if created.IsZero() {
		created = time.Now().UTC()
	}
	return Info{Key: key, Size: n, SHA256: sum, Created: created}, nil
}

// Open stats the object to check the range, then reads the range.
func (s *S3) Open(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	info, err := s.Stat(ctx, key)
	if err != nil {
		return nil, err
	}
	if err := checkRange(off, n, info.Size, s.lim); err != nil {
		return nil, err
	}
	if n == 0 {
		return io.NopCloser(strings.NewReader("")), nil
	}
	var opts minio.GetObjectOptions
	if err := opts.SetRange(off, off+n-1); err != nil {
		return nil, errorsJoin(ErrRange, err.Error())
	}
	obj, err := s.client.GetObject(ctx, s.bucket, s.prefix+key, opts)
	if err != nil {
		return nil, s.mapError(err)
	}
	return obj, nil
}

// Stat reads the object's size, time and SHA-256 from its metadata.
func (s *S3) Stat(ctx context.Context, key string) (Info, error) {
	if !ValidKey(key) {
		return Info{}, ErrInvalidKey
	}
	oi, err := s.client.StatObject(ctx, s.bucket, s.prefix+key, minio.StatObjectOptions{})
	if err != nil {
		return Info{}, s.mapError(err)
	}
	info := Info{Key: key, Size: oi.Size, Created: oi.LastModified}
	for k, v := range oi.UserMetadata {
		if strings.EqualFold(k, metaSHA256) {
			info.SHA256 = v
		}
	}
	return info, nil
}

// Delete removes the object.
func (s *S3) Delete(ctx context.Context, key string) error {
	if !ValidKey(key) {
		return ErrInvalidKey
	}
	if err := s.client.RemoveObject(ctx, s.bucket, s.prefix+key, minio.RemoveObjectOptions{}); err != nil {
		if err = s.mapError(err); !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	return nil
}

// Expire lists the objects under the prefix and removes those last modified before before.
func (s *S3) Expire(ctx context.Context, before time.Time) (int, error) {
	removed := 0
	for oi := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix, Recursive: true}) {
		if oi.Err != nil {
			return removed, s.mapError(oi.Err)
		}
		if !oi.LastModified.Before(before) {
			continue
		}
		if err := s.client.RemoveObject(ctx, s.bucket, oi.Key, minio.RemoveObjectOptions{}); err != nil {
			return removed, s.mapError(err)
		}
		removed++
	}
	return removed, nil
}

// PresignGet presigns a GET of the range, with the Range header signed when it is not the
// whole object.
func (s *S3) PresignGet(ctx context.Context, key string, off, n int64, whole bool, ttl time.Duration) (string, error) {
	if !ValidKey(key) {
		return "", ErrInvalidKey
	}
	var u fmt.Stringer
	var err error
	if whole {
		u, err = s.client.PresignedGetObject(ctx, s.bucket, s.prefix+key, ttl, nil)
	} else {
		h := http.Header{"Range": {"bytes=" + strconv.FormatInt(off, 10) + "-" + strconv.FormatInt(off+n-1, 10)}}
		u, err = s.client.PresignHeader(ctx, http.MethodGet, s.bucket, s.prefix+key, ttl, nil, h)
	}
	if err != nil {
		return "", fmt.Errorf("blob: s3 store: presigning: %w", err)
	}
	return u.String(), nil
}

// mapError turns the object store's answers into the package's errors.
func (s *S3) mapError(err error) error {
	switch minio.ToErrorResponse(err).Code {
	case "NoSuchKey", "NotFound":
		return ErrNotFound
	case "PreconditionFailed":
		return ErrExists
	}
	return fmt.Errorf("blob: s3 store: %w", err)
}
