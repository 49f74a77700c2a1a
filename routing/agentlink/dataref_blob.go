package agentlink

import (
	"context"
	"errors"
	"strings"

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

var _ DataURLs = (*BlobURLs)(nil)

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
	switch {
	case err == nil:
		return url, nil
	case errors.Is(err, blob.ErrInvalidRef):
		return "", refError(ref, "not a valid blob: ref", err)
	case errors.Is(err, blob.ErrNotFound):
		return "", refError(ref, "no such blob object", err)
	case errors.Is(err, blob.ErrRange):
		return "", refError(ref, "the byte range is outside the object", err)
	}
	return "", err
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
