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
	g, size, err := r.readGrant(ctx, ref, task, agent, off, n)
	if err != nil {
		return "", err
	}
	g.Expires = r.expiry()
	if r.presign != nil {
		return r.presign.PresignGet(ctx, g.Key, g.Offset, g.Length, g.Offset == 0 && g.Length == size, r.ttl)
	}
	return r.url(g), nil
}

// readGrant resolves a read of n bytes of ref from off (n -1: to the end) against the
// object (without an expiry), and returns the object's size.
func (r *Refs) readGrant(ctx context.Context, ref, task, agent string, off, n int64) (Grant, int64, error) {
	key, err := ParseRef(ref)
	if err != nil {
		return Grant{}, 0, err
	}
	info, err := r.store.Stat(ctx, key)
	if err != nil {
		return Grant{}, 0, err
	}
	if n < 0 {
		n = info.Size - min(off, info.Size)
	}
	if off < 0 || off > info.Size || n > info.Size-off {
		return Grant{}, 0, errorsJoin(ErrRange, "past the end of the object")
	}
	g := Grant{Method: http.MethodGet, Key: key, Task: task, Agent: agent, Offset: off, Length: n}
	if err := checkGrant(g); err != nil {
		return Grant{}, 0, err
	}
	return g, info.Size, nil
}

// Read is one input of a scoped task: the object ref, from Offset, Length bytes (-1: to the
// end of the object).
type Read struct {
	Ref    string
	Offset int64
	Length int64
}

// ReadError is Scope's failure to grant one of its reads: Reads[Index] of the call.
type ReadError struct {
	Index int
	Err   error
}

func (e *ReadError) Error() string { return fmt.Sprintf("blob: read %d: %v", e.Index, e.Err) }
func (e *ReadError) Unwrap() error { return e.Err }

// Scoped is what a trusted agent's task gets: plain URLs of the gateway's endpoint (no
// query) and the one task token that grants them.
type Scoped struct {
	// Reads are the URLs of the inputs, in the order asked.
	Reads []string
	// UploadURL is where the agent PUTs its one output; UploadRef names that output.
	UploadURL, UploadRef string
	// Token grants every read's range and the upload, for the task and the agent.
	Token string
	// Expires is when the token stops working.
	Expires time.Time
}

// Scope returns the plain URLs of reads and of one upload (at most maxBytes; 0 or more
// than the store allows: its MaxObjectBytes) and one task token granting exactly them to
// agent for task, for ttl (at most the refs' TTL; 0: the TTL), to the millisecond. Reads
// always go through the gateway's endpoint, even with presigning on: the token is the
// gateway's. It fails as Fetch and Upload do.
func (r *Refs) Scope(ctx context.Context, task, agent string, reads []Read, maxBytes int64, ttl time.Duration) (Scoped, error) {
	if ttl <= 0 || ttl > r.ttl {
		ttl = r.ttl
	}
	tok := Token{Task: task, Agent: agent, Expires: r.now().Add(ttl).Truncate(time.Millisecond)}
	var out Scoped
	for i, rd := range reads {
		g, _, err := r.readGrant(ctx, rd.Ref, task, agent, rd.Offset, rd.Length)
		if err != nil {
			return Scoped{}, &ReadError{Index: i, Err: err}
		}
		tok.Scopes = append(tok.Scopes, Scope{Method: http.MethodGet, Key: g.Key, Offset: g.Offset, Length: g.Length})
		out.Reads = append(out.Reads, r.plainURL(g.Key))
	}
	limit := r.store.Limits().MaxObjectBytes
	if maxBytes <= 0 || maxBytes > limit {
		maxBytes = limit
	}
	key := newUploadKey()
	tok.Scopes = append(tok.Scopes, Scope{Method: http.MethodPut, Key: key, Length: maxBytes})
	t, err := r.signer.SignToken(tok)
	if err != nil {
		return Scoped{}, err
	}
	out.UploadURL, out.UploadRef, out.Token, out.Expires = r.plainURL(key), Ref(key), t, tok.Expires
	return out, nil
}

// Upload grants one PUT of a new object under a fresh random key.
func (r *Refs) Upload(_ context.Context, task, agent string, maxBytes int64) (string, string, error) {
	limit := r.store.Limits().MaxObjectBytes
	if maxBytes <= 0 || maxBytes > limit {
		maxBytes = limit
	}
	key := newUploadKey()
	g := Grant{Method: http.MethodPut, Key: key, Task: task, Agent: agent, Expires: r.expiry(), Length: maxBytes}
	if err := checkGrant(g); err != nil {
		return "", "", err
	}
	return r.url(g), Ref(key), nil
}

// newUploadKey returns a fresh random key for an agent's output.
func newUploadKey() string {
	var id [16]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails (Go 1.24+)
	return uploadPrefix + hex.EncodeToString(id[:])
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

// plainURL returns the gateway's URL of key without a signature: a task token grants it.
func (r *Refs) plainURL(key string) string {
	u := *r.base
	u.Path += EndpointPath + key
	return u.String()
}
