package agentlink

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state/blob"
)

// ErrExternalRef refuses a DataRef that is not a blob: ref when the blob store issues the
// hub's URLs and agents.allow_external_data_refs is off: a caller must not make an agent
// fetch an arbitrary URL (the agent's network is not the caller's).
var ErrExternalRef = errors.New("agentlink: only blob: data refs are accepted (agents.allow_external_data_refs is off)")

// BlobURLs is the DataURLs of the gateway's blob store (state/blob): a "blob:KEY" DataRef
// becomes a short-lived URL of the blob endpoint (or a presigned object-store URL), signed
// and bound to the task and the agent, covering the ref's byte range (Offset, and Length
// bytes; Length 0: to the end of the object); every dispatch gets a URL to upload one
// output to. Any other URI is refused unless AllowExternal, in which case it travels
// untouched. It is safe for concurrent use.
type BlobURLs struct {
	refs          func() *blob.Refs
	allowExternal bool
}

var _ ScopedDataURLs = (*BlobURLs)(nil)

// NewBlobURLs returns the DataURLs of the Refs refs returns when a URL is asked for (the
// server knows them once its boundary listener is bound; nil: no URL can be issued and a
// task with DataRefs fails with UNAVAILABLE); allowExternal lets DataRefs other than blob:
// refs through untouched (agents.allow_external_data_refs).
func NewBlobURLs(refs func() *blob.Refs, allowExternal bool) *BlobURLs {
	return &BlobURLs{refs: refs, allowExternal: allowExternal}
}

// Fetch returns the URL agent reads ref's bytes from while it runs task. A refusal is a
// *gateway.Error (INVALID_PARAMS naming the ref and the reason) the caller sees.
func (b *BlobURLs) Fetch(ctx context.Context, ref DataRef, task, agent string) (string, error) {
	if !strings.HasPrefix(ref.URI, blob.RefScheme+":") {
		if !b.allowExternal {
			return "", refError(ref, "only blob: data refs are accepted: upload the data to the gateway (POST /blobs/) and pass its ref", ErrExternalRef)
		}
		return ref.URI, nil
	}
	url, err := b.fetch(ctx, ref, task, agent)
	if err != nil {
		return "", resolveError(ref, err)
	}
	return url, nil
}

// resolveError is the caller's error for a blob: ref the store cannot grant.
func resolveError(ref DataRef, err error) error {
	switch {
	case errors.Is(err, blob.ErrInvalidRef):
		return refError(ref, "not a valid blob: ref", err)
	case errors.Is(err, blob.ErrNotFound):
		return refError(ref, "no such blob object", err)
	case errors.Is(err, blob.ErrRange):
		return refError(ref, "the byte range is outside the object", err)
	}
	return err
}

// Scope gives a trusted agent's task plain URLs of the blob endpoint for its blob: refs
// (over each ref's byte range), one upload, and one task token granting exactly them,
// expiring within ttl (and blobs.url_ttl). External refs are refused as by Fetch, or pass
// untouched (without the token) when allowed. Reads go through the gateway's endpoint even
// with presigning on: the token is the gateway's.
func (b *BlobURLs) Scope(ctx context.Context, refs []DataRef, task, agent string, maxBytes int64, ttl time.Duration) (ScopedRefs, error) {
	r := b.refs()
	if r == nil {
		return ScopedRefs{}, errNoRefs
	}
	var reads []blob.Read
	var ours []int // the index in refs of each read
	for i, ref := range refs {
		if !strings.HasPrefix(ref.URI, blob.RefScheme+":") {
			if !b.allowExternal {
				return ScopedRefs{}, refError(ref, "only blob: data refs are accepted: upload the data to the gateway (POST /blobs/) and pass its ref", ErrExternalRef)
			}
			continue
		}
		if ref.Offset > 1<<62 || ref.Length > 1<<62 {
			return ScopedRefs{}, resolveError(ref, blob.ErrRange)
		}
		n := int64(ref.Length)
		if n == 0 {
			n = -1 // to the end of the object
		}
		reads = append(reads, blob.Read{Ref: ref.URI, Offset: int64(ref.Offset), Length: n})
		ours = append(ours, i)
	}
	sc, err := r.Scope(ctx, task, agent, reads, maxBytes, ttl)
	if re, ok := errors.AsType[*blob.ReadError](err); ok {
		return ScopedRefs{}, resolveError(refs[ours[re.Index]], re.Err)
	}
	if err != nil {
		return ScopedRefs{}, err
	}
	auth := func() map[string]string { return map[string]string{"Authorization": "Bearer " + sc.Token} }
	out := ScopedRefs{Inputs: make([]DataRef, len(refs)), Token: sc.Token,
		Upload: DataRef{URI: sc.UploadURL, Name: sc.UploadRef, Headers: auth(), Expires: sc.Expires}}
	for i, ref := range refs {
		ref.Headers = nil
		out.Inputs[i] = ref
	}
	for j, i := range ours {
		out.Inputs[i].URI, out.Inputs[i].Headers, out.Inputs[i].Expires = sc.Reads[j], auth(), sc.Expires
	}
	return out, nil
}

// errNoRefs fails a DataRef while the blob store issues no URL.
var errNoRefs = gateway.Errorf(schemas.CodeUnavailable, "The blob store issues no URLs")

// fetch grants the read of ref's range.
func (b *BlobURLs) fetch(ctx context.Context, ref DataRef, task, agent string) (string, error) {
	refs := b.refs()
	if refs == nil {
		return "", errNoRefs
	}
	if ref.Offset == 0 && ref.Length == 0 {
		return refs.Fetch(ctx, ref.URI, task, agent)
	}
	if ref.Offset > 1<<62 || ref.Length > 1<<62 {
		return "", blob.ErrRange
	}
	off, n := int64(ref.Offset), int64(ref.Length)
	if n == 0 { // from Offset to the end
		key, err := blob.ParseRef(ref.URI)
		if err != nil {
			return "", err
		}
		info, err := refs.Store().Stat(ctx, key)
		if err != nil {
			return "", err
		}
		if off > info.Size {
			return "", blob.ErrRange
		}
		n = info.Size - off
	}
	return refs.FetchRange(ctx, ref.URI, task, agent, off, n)
}

// refError is the caller's error for a DataRef that cannot be resolved.
func refError(ref DataRef, reason string, cause error) *gateway.Error {
	return gateway.NewError(schemas.CodeInvalidParams).With("data_ref", ref.Name).With("reason", reason).Wrap(cause)
}

// Upload returns the URL agent may PUT one output of task to, at most maxBytes (0: the
// store's limit), and the blob: ref the output is known by.
func (b *BlobURLs) Upload(ctx context.Context, task, agent string, maxBytes int64) (string, string, error) {
	refs := b.refs()
	if refs == nil {
		return "", "", errNoRefs
	}
	return refs.Upload(ctx, task, agent, maxBytes)
}
