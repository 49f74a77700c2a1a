package agentlink

import (
	"context"
	"time"

	agentlinkv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/agentlink/v1"
)

// DataRef is data passed by reference: a URI its holder fetches within limits.
type DataRef struct {
	// URI is where the data is: a URL, or a handle a DataURLs resolves.
	URI string `json:"uri"`
	// Name names the reference within its task.
	Name string `json:"name,omitempty"`
	// Size is the data's size in bytes, when known.
	Size uint64 `json:"size_bytes,omitempty"`
	// SHA256 is the data's SHA-256 (64 lowercase hex digits), when known.
	SHA256 string `json:"sha256,omitempty"`
	// MediaType is the data's media type, when known.
	MediaType string `json:"media_type,omitempty"`
	// Offset and Length are the byte range the reference covers; Length 0 is all of it.
	Offset uint64 `json:"offset,omitempty"`
	Length uint64 `json:"length,omitempty"`
	// Headers are sent when fetching (short-lived credentials). They never appear in a
	// result, a log line or an error.
	Headers map[string]string `json:"-"`
	// Expires is when the reference stops working; zero when not stated.
	Expires time.Time `json:"-"`
}

// DataURLs turns DataRefs into what one agent may use for one task: the gateway's blob
// endpoint implements it (short-lived signed URLs bound to the task and the agent). Without
// one, DataRefs travel to and from agents untouched.
type DataURLs interface {
	// Fetch returns the URL agent fetches ref's content from while it runs task.
	Fetch(ctx context.Context, ref DataRef, task, agent string) (url string, err error)
	// Upload returns a URL agent may upload one output of task to (at most maxBytes;
	// 0: the store's own limit) and the handle (ref) the output is known by once uploaded.
	Upload(ctx context.Context, task, agent string, maxBytes int64) (url, ref string, err error)
}

// toProto converts r for the wire.
func (r DataRef) toProto() *agentlinkv1.DataRef {
	p := &agentlinkv1.DataRef{Uri: r.URI, Name: r.Name, SizeBytes: r.Size, Sha256: r.SHA256, MediaType: r.MediaType, Headers: r.Headers}
	if r.Offset != 0 || r.Length != 0 {
		p.Range = &agentlinkv1.ByteRange{Offset: r.Offset, Length: r.Length}
	}
	if !r.Expires.IsZero() {
		p.ExpiresUnixMs = r.Expires.UnixMilli()
	}
	return p
}

// refFromProto converts a wire DataRef. Headers an agent sends are dropped: a reference a
// caller receives carries no agent's credentials.
func refFromProto(p *agentlinkv1.DataRef) DataRef {
	r := DataRef{URI: p.GetUri(), Name: p.GetName(), Size: p.GetSizeBytes(), SHA256: p.GetSha256(), MediaType: p.GetMediaType(),
		Offset: p.GetRange().GetOffset(), Length: p.GetRange().GetLength()}
	if ms := p.GetExpiresUnixMs(); ms > 0 {
		r.Expires = time.UnixMilli(ms)
	}
	return r
}

// ScopedDataURLs is DataURLs that can also serve a trusted agent (agents.auth.trusted_scope):
// instead of one signed URL per ref, its task gets plain URLs and one short-lived bearer
// token bound to the task, the agent, exactly those refs' byte ranges and one upload.
type ScopedDataURLs interface {
	DataURLs
	// Scope resolves refs for agent running task: each ref as the agent receives it, the
	// output upload, and the token (expiring within ttl). Refs the gateway does not serve
	// (external ones, when allowed) pass untouched and never carry the token.
	Scope(ctx context.Context, refs []DataRef, task, agent string, maxBytes int64, ttl time.Duration) (ScopedRefs, error)
}

// ScopedRefs is what ScopedDataURLs.Scope gives a trusted agent's task.
type ScopedRefs struct {
	// Inputs are the task's refs, in order: the gateway's with a plain URL and the token in
	// an Authorization header, others untouched.
	Inputs []DataRef
	// Upload is where the agent PUTs one output (URI, the token in its headers) and the
	// ref it is known by (Name).
	Upload DataRef
	// Token is the bearer token.
	Token string
}
