package blob

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// RefScheme is the URI scheme of a DataRef: "blob:" followed by the object's key.
const RefScheme = "blob"

// EndpointPath is the path of the gateway's blob endpoint under the public base URL; an
// object's URL is EndpointPath + key.
const EndpointPath = "/blobs/"

// uploadPrefix starts the key of every object an agent uploads.
const uploadPrefix = "out/"

// Ref returns the DataRef of the object key.
func Ref(key string) string { return RefScheme + ":" + key }

// ParseRef returns the object key a DataRef names, or ErrInvalidRef.
func ParseRef(ref string) (string, error) {
	key, ok := strings.CutPrefix(ref, RefScheme+":")
	if !ok || !ValidKey(key) {
		return "", ErrInvalidRef
	}
	return key, nil
}

// Issuer is what the agent link needs of the blob store: URLs that let one agent, working
// on one task, read an input or write one output, for a short time.
type Issuer interface {
	// Fetch returns a short-lived URL an agent GETs the bytes of the input ref from, bound to
	// task and agent. It fails with ErrInvalidRef or ErrNotFound.
	Fetch(ctx context.Context, ref, task, agent string) (string, error)
	// Upload returns a short-lived URL an agent PUTs one output of at most maxBytes bytes to
	// (0 or more than the store allows: the store's MaxObjectBytes), bound to task and
	// agent, and the DataRef the task's result names it by. The URL works once: a second
	// PUT is refused.
	Upload(ctx context.Context, task, agent string, maxBytes int64) (uploadURL, ref string, err error)
}

// Refs issues the URLs of DataRefs: signed URLs of the gateway's blob endpoint, or for an
// S3 store with presigning on, presigned object-store URLs for reads. It implements Issuer
// and is safe for concurrent use.
type Refs struct {
	store   Store
	signer  *Signer
	base    *url.URL
	ttl     time.Duration
	presign Presigner // nil: reads go through the gateway's endpoint too
	now     func() time.Time
}

var _ Issuer = (*Refs)(nil)

// RefsOptions are what NewRefs builds a Refs from.
type RefsOptions struct {
	// Store holds the objects.
	Store Store
	// Signer signs the gateway's URLs.
	Signer *Signer
	// PublicURL is the base URL agents reach the gateway's boundary listener by
	// (scheme://host[:port][/path]); the blob endpoint is under it at EndpointPath.
	PublicURL string
	// TTL is how long an issued URL works.
	TTL time.Duration
	// Presign has reads of a Store that implements Presigner served by the object store.
	Presign bool
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// NewRefs returns the Refs of o.
func NewRefs(o RefsOptions) (*Refs, error) {
	if o.Store == nil || o.Signer == nil {
		return nil, errors.New("blob: refs need a store and a signer")
	}
	base, err := ParsePublicURL(o.PublicURL)
	if err != nil {
		return nil, err
	}
	if o.TTL <= 0 {
		return nil, errors.New("blob: the URL lifetime must be positive")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	r := &Refs{store: o.Store, signer: o.Signer, base: base, ttl: o.TTL, now: o.Now}
	if p, ok := o.Store.(Presigner); ok && o.Presign {
		r.presign = p
	}
	return r, nil
}

// ParsePublicURL checks a public base URL: absolute http or https, with a host, no query,
// fragment or user information. A trailing slash of its path is dropped.
func ParsePublicURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return nil, fmt.Errorf("blob: public URL %q: want http(s)://host[:port][/path]", s)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// Store returns the store the refs name objects of.
func (r *Refs) Store() Store { return r.store }

// Fetch returns a URL that reads the whole object ref.
func (r *Refs) Fetch(ctx context.Context, ref, task, agent string) (string, error) {
	return r.fetch(ctx, ref, task, agent, 0, -1)
}

// FetchRange returns a URL that reads n bytes of the object ref from off.
func (r *Refs) FetchRange(ctx context.Context, ref, task, agent string, off, n int64) (string, error) {
	if n < 0 {
		return "", errorsJoin(ErrRange, "negative length")
	}
	return r.fetch(ctx, ref, task, agent, off, n)
}

// fetch grants a read of n bytes from off (n -1: to the end).
func (r *Refs) fetch(ctx context.Context, ref, task, agent string, off, n int64) (string, error) {
	key, err := ParseRef(ref)
	if err != nil {
		return "", err
	}
	info, err := r.store.Stat(ctx, key)
	if err != nil {
		return "", err
	}
	if n < 0 {
		n = info.Size - min(off, info.Size)
	}
	if off < 0 || off > info.Size || n > info.Size-off {
		return "", errorsJoin(ErrRange, "past the end of the object")
	}
	g := Grant{Method: http.MethodGet, Key: key, Task: task, Agent: agent, Expires: r.expiry(), Offset: off, Length: n}
	if err := checkGrant(g); err != nil {
		return "", err
	}
	if r.presign != nil {
		return r.presign.PresignGet(ctx, key, off, n, off == 0 && n == info.Size, r.ttl)
	}
	return r.url(g), nil
}

// Upload grants one PUT of a new object under a fresh random key.
func (r *Refs) Upload(_ context.Context, task, agent string, maxBytes int64) (string, string, error) {
	limit := r.store.Limits().MaxObjectBytes
	if maxBytes <= 0 || maxBytes > limit {
		maxBytes = limit
	}
	var id [16]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails (Go 1.24+)
	key := uploadPrefix + hex.EncodeToString(id[:])
	g := Grant{Method: http.MethodPut, Key: key, Task: task, Agent: agent, Expires: r.expiry(), Length: maxBytes}
	if err := checkGrant(g); err != nil {
		return "", "", err
	}
	return r.url(g), Ref(key), nil
}

// expiry is when a URL issued now stops working: TTL from now, rounded up to the second.
func (r *Refs) expiry() time.Time {
	return r.now().Add(r.ttl + time.Second - 1).Truncate(time.Second)
}

// url returns the gateway's URL of g.
func (r *Refs) url(g Grant) string {
	u := *r.base
	u.Path += EndpointPath + g.Key
	u.RawQuery = r.signer.Sign(g)
	return u.String()
}
