package blobface

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state/blob"
)

// Gateway is the gateway as this face sees it: the configuration in force, whose
// authenticator checks the callers that upload.
type Gateway interface {
	// Acquire returns the configuration in force, held until its Release.
	Acquire() faces.Runtime
}

// Options are what New builds a Face from.
type Options struct {
	// Store holds the objects.
	Store blob.Store
	// Signer verifies the signed URLs.
	Signer *blob.Signer
	// Gateway authenticates callers' uploads.
	Gateway Gateway
	// WriteScope is the scope a caller's upload needs (blob.DefaultScope when empty).
	WriteScope string
	// ReadScope is the scope a caller's authenticated read needs (blob.DefaultReadScope
	// when empty).
	ReadScope string
	// Log receives the store's failures; nil discards them.
	Log *slog.Logger
}

// Face is the blob endpoint. A nil *Face answers every request with 404: the blobs section
// is off.
type Face struct {
	store  blob.Store
	signer *blob.Signer
	gw     Gateway
	scope  string
	read   string
	log    *slog.Logger
}

var _ http.Handler = (*Face)(nil)

// callerPrefix starts the key of every object a caller uploads.
const callerPrefix = "in/"

// New returns the face of o.
func New(o Options) *Face {
	if o.WriteScope == "" {
		o.WriteScope = blob.DefaultScope
	}
	if o.ReadScope == "" {
		o.ReadScope = blob.DefaultReadScope
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Face{store: o.Store, signer: o.Signer, gw: o.Gateway, scope: o.WriteScope, read: o.ReadScope, log: o.Log}
}

// ServeHTTP routes a request under blob.EndpointPath and records it in the access log of
// the configuration in force.
func (f *Face) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	x := &exchange{traceID: observability.NewTraceID(), start: time.Now(), op: "blobs." + strings.ToLower(r.Method)}
	key, ok := strings.CutPrefix(r.URL.Path, blob.EndpointPath)
	switch {
	case f == nil || !ok:
		f.fail(w, http.StatusNotFound, gateway.Errorf(schemas.CodeInvalidRequest, "No such endpoint"), x)
		return // off: nothing to record
	case key == "" && r.Method == http.MethodPost:
		x.op = "blobs.upload"
		f.serveCallerUpload(w, r, x)
	case key == "":
		f.fail(w, http.StatusMethodNotAllowed, gateway.Errorf(schemas.CodeInvalidRequest, "Method not allowed"), x)
	case !blob.ValidKey(key):
		f.fail(w, http.StatusBadRequest, gateway.Errorf(schemas.CodeInvalidRequest, "Invalid object key").
			With("reason", "invalid_key"), x)
	case r.Method == http.MethodGet:
		f.serveGet(w, r, key, x)
	case r.Method == http.MethodPut:
		f.servePut(w, r, key, x)
	default:
		f.fail(w, http.StatusMethodNotAllowed, gateway.Errorf(schemas.CodeInvalidRequest, "Method not allowed"), x)
	}
	f.record(r.Context(), x)
}

// exchange is one request's trace id and what its access line says.
type exchange struct {
	traceID string
	start   time.Time
	op      string       // blobs.get, blobs.put, blobs.upload
	caller  string       // the agent of a signed URL, the subject of an uploading caller
	code    schemas.Code // the refusal's code; 0 for a success
}

// record writes the access line of x (log.access), as a call's is.
func (f *Face) record(ctx context.Context, x *exchange) {
	rt := f.gw.Acquire()
	defer rt.Release()
	if p := rt.Pipeline(); p != nil {
		p.Access.Record(ctx, &observability.AccessEntry{
			Method: x.op, Protocol: "http", Code: int(x.code), Duration: time.Since(x.start), Caller: x.caller, TraceID: x.traceID,
		})
	}
}

// verify checks the signed URL of r for method on key, answering a refusal itself.
func (f *Face) verify(w http.ResponseWriter, r *http.Request, key string, x *exchange) (blob.Grant, bool) {
	g, err := f.signer.Verify(r.Method, key, r.URL.RawQuery)
	if err == nil {
		x.caller = "agent:" + g.Agent
		return g, true
	}
	reason, hint := "bad_signature", "use the URL exactly as the gateway issued it"
	switch {
	case errors.Is(err, blob.ErrUnsigned):
		reason, hint = "unsigned", "use a URL the gateway signed"
	case errors.Is(err, blob.ErrExpired):
		reason, hint = "expired", "ask the gateway for a new URL"
	}
	f.fail(w, http.StatusUnauthorized, gateway.Errorf(schemas.CodeAuthentication, "The blob URL is not valid").
		With("reason", reason).With("recovery_hint", hint), x)
	return blob.Grant{}, false
}

// taskToken returns the task token r carries as its bearer credential (blob.TokenPrefix);
// ok is false when its Authorization is anything else (a caller's credential, or none).
func taskToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if len(h) < 7 || !strings.EqualFold(h[:7], "Bearer ") {
		return "", false
	}
	tok := strings.TrimSpace(h[7:])
	return tok, strings.HasPrefix(tok, blob.TokenPrefix)
}

// verifyToken checks the task token of a request for method on key and returns what it
// grants there (one grant or more), answering a refusal itself: 400 when the URL is signed
// too, 401 for a token that is malformed, tampered with or expired, 403 when it grants
// nothing for this method and key.
func (f *Face) verifyToken(w http.ResponseWriter, r *http.Request, key, tok string, x *exchange) ([]blob.Grant, bool) {
	if r.URL.RawQuery != "" {
		f.fail(w, http.StatusBadRequest, gateway.Errorf(schemas.CodeInvalidRequest, "A task token is used with the plain URL of an object").
			With("reason", "token_and_query").With("recovery_hint", "drop the query string, or the token"), x)
		return nil, false
	}
	t, err := f.signer.VerifyToken(tok)
	if err != nil {
		reason, hint := "bad_signature", "use the token exactly as the gateway issued it"
		switch {
		case errors.Is(err, blob.ErrTokenMalformed):
			reason = "malformed_token"
		case errors.Is(err, blob.ErrExpired):
			reason, hint = "expired", "the task's time is over: the gateway issues a new token with the next task"
		}
		f.fail(w, http.StatusUnauthorized, gateway.Errorf(schemas.CodeAuthentication, "The task token is not valid").
			With("reason", reason).With("recovery_hint", hint), x)
		return nil, false
	}
	x.caller = "agent:" + t.Agent
	gs := t.Grants(r.Method, key)
	if len(gs) == 0 {
		f.fail(w, http.StatusForbidden, gateway.Errorf(schemas.CodeAuthorization, "The task token does not grant this object").
			With("reason", "not_granted").With("method", r.Method).With("task", t.Task), x)
		return nil, false
	}
	return gs, true
}

// serveGet answers a read: the Range asked for, or the whole grant. A signed URL grants
// its range; a task token the ranges it lists for the key (the first that holds the Range
// asked for; without a Range header, the first); a caller without a signature but with a
// credential holding the read scope is granted the whole object.
func (f *Face) serveGet(w http.ResponseWriter, r *http.Request, key string, x *exchange) {
	tok, token := taskToken(r)
	caller := !token && r.URL.RawQuery == "" && r.Header.Get("Authorization") != ""
	var grants []blob.Grant
	switch {
	case token:
		var ok bool
		if grants, ok = f.verifyToken(w, r, key, tok, x); !ok {
			return
		}
	case caller:
		x.op = "blobs.read"
		if !f.authorize(w, r, f.read, x) {
			return
		}
	default:
		g, ok := f.verify(w, r, key, x)
		if !ok {
			return
		}
		grants = []blob.Grant{g}
	}
	info, err := f.store.Stat(r.Context(), key)
	if err != nil {
		f.storeError(w, err, x)
		return
	}
	if caller {
		grants = []blob.Grant{{Method: http.MethodGet, Key: key, Offset: 0, Length: info.Size}}
	}
	var off, n int64
	for _, g := range grants {
		if off, n, err = requestedRange(r.Header.Get("Range"), g, info.Size); err == nil {
			break
		}
	}
	if err != nil {
		w.Header().Set("Content-Range", "bytes */"+strconv.FormatInt(info.Size, 10))
		f.fail(w, http.StatusRequestedRangeNotSatisfiable, rangeError(err.Error(), grants[0]), x)
		return
	}
	body, err := f.store.Open(r.Context(), key, off, n)
	if err != nil {
		f.storeError(w, err, x)
		return
	}
	defer func() { _ = body.Close() }()
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.FormatInt(n, 10))
	h.Set("X-Trace-Id", x.traceID)
	status := http.StatusOK
	if off != 0 || n != info.Size {
		status = http.StatusPartialContent
		h.Set("Content-Range", "bytes "+strconv.FormatInt(off, 10)+"-"+strconv.FormatInt(off+n-1, 10)+"/"+strconv.FormatInt(info.Size, 10))
	} else if raw, err := hex.DecodeString(info.SHA256); err == nil && len(raw) > 0 {
		h.Set("Repr-Digest", "sha-256=:"+base64.StdEncoding.EncodeToString(raw)+":") // RFC 9530
	}
	w.WriteHeader(status)
	if _, err := io.Copy(w, body); err != nil {
		f.log.Debug("blob: sending an object", "trace_id", x.traceID, "err", err)
	}
}

// rangeError is the 416 refusal, naming the granted range.
func rangeError(detail string, g blob.Grant) *gateway.Error {
	return gateway.Errorf(schemas.CodeInvalidParams, "Range not satisfiable: %s", detail).
		With("reason", "range_not_satisfiable").With("granted_offset", g.Offset).With("granted_length", g.Length)
}

// servePut stores the body of a signed write, or one a task token grants: at most the
// granted size, once.
func (f *Face) servePut(w http.ResponseWriter, r *http.Request, key string, x *exchange) {
	var g blob.Grant
	if tok, token := taskToken(r); token {
		gs, ok := f.verifyToken(w, r, key, tok, x)
		if !ok {
			return
		}
		g = gs[0]
	} else {
		var ok bool
		if g, ok = f.verify(w, r, key, x); !ok {
			return
		}
	}
	if r.ContentLength > g.Length {
		f.tooLarge(w, g.Length, x)
		return
	}
	if _, err := f.store.Stat(r.Context(), key); err == nil {
		f.storeError(w, blob.ErrExists, x)
		return
	} else if !errors.Is(err, blob.ErrNotFound) {
		f.storeError(w, err, x)
		return
	}
	f.create(w, r, key, g.Length, x)
}

// create stores the body of r under key, at most limit bytes, and answers with its ref.
func (f *Face) create(w http.ResponseWriter, r *http.Request, key string, limit int64, x *exchange) {
	body := &limitReader{r: r.Body, left: limit}
	info, err := f.store.Create(r.Context(), key, body, r.ContentLength)
	switch {
	case body.over || errors.Is(err, blob.ErrTooLarge):
		f.tooLarge(w, min(limit, f.store.Limits().MaxObjectBytes), x)
		return
	case err != nil:
		f.storeError(w, err, x)
		return
	}
	out, _ := json.Marshal(Created{Ref: blob.Ref(info.Key), Size: info.Size, SHA256: info.SHA256})
	h := w.Header()
	h.Set("Content-Type", faces.JSONContentType)
	h.Set("X-Trace-Id", x.traceID)
	h.Set("Location", blob.EndpointPath+info.Key)
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(out)
}

// Created is the answer to an upload.
type Created struct {
	// Ref is the object's DataRef.
	Ref string `json:"ref"`
	// Size is its length in bytes.
	Size int64 `json:"size"`
	// SHA256 is the lowercase hex SHA-256 of its bytes.
	SHA256 string `json:"sha256"`
}

// serveCallerUpload authenticates the caller, checks the write scope, and stores the body
// under a fresh key.
func (f *Face) serveCallerUpload(w http.ResponseWriter, r *http.Request, x *exchange) {
	if !f.authorize(w, r, f.scope, x) {
		return
	}
	limit := f.store.Limits().MaxObjectBytes
	if r.ContentLength > limit {
		f.tooLarge(w, limit, x)
		return
	}
	f.create(w, r, callerPrefix+randomID(), limit, x)
}

// authorize authenticates the caller of r and checks it holds scope, answering a refusal
// itself (401 with a challenge, 403 naming the scope).
func (f *Face) authorize(w http.ResponseWriter, r *http.Request, scope string, x *exchange) bool {
	rt := f.gw.Acquire()
	p, err := rt.Authenticator().Authenticate(r.Context(), faces.HTTPCredentials(r, gateway.ZoneExternal))
	rt.Release()
	if err != nil {
		e := authError(err)
		x.code = e.Code()
		faces.WriteChallenge(w, e, x.traceID, faces.EncodingJSON, "")
		return false
	}
	x.caller = p.Subject
	if !slices.Contains(p.Scopes, scope) {
		w.Header().Set("WWW-Authenticate", faces.ScopeChallenge([]string{scope}, ""))
		f.fail(w, http.StatusForbidden, gateway.NewError(schemas.CodeInsufficientScope).With("required", []string{scope}), x)
		return false
	}
	return true
}

// authError is err as the gateway's error type.
func authError(err error) *gateway.Error {
	if e := gateway.AsError(err); e != nil {
		return e
	}
	return gateway.NewError(schemas.CodeAuthentication)
}

// randomID returns 128 random bits in hex.
func randomID() string {
	var id [16]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(id[:])
}

// tooLarge answers 413 naming the limit.
func (f *Face) tooLarge(w http.ResponseWriter, limit int64, x *exchange) {
	f.fail(w, http.StatusRequestEntityTooLarge, gateway.NewError(schemas.CodePayloadTooLarge).
		With("limit", "max_object_bytes").With("max", limit), x)
}

// storeError answers a store's refusal or failure.
func (f *Face) storeError(w http.ResponseWriter, err error, x *exchange) {
	switch {
	case errors.Is(err, blob.ErrNotFound):
		f.fail(w, http.StatusNotFound, gateway.Errorf(schemas.CodeRetrieval, "No such object").With("reason", "not_found"), x)
	case errors.Is(err, blob.ErrExists):
		f.fail(w, http.StatusConflict, gateway.Errorf(schemas.CodeInvalidRequest, "The object exists already; objects are written once").
			With("reason", "exists"), x)
	case errors.Is(err, blob.ErrTooLarge):
		f.tooLarge(w, f.store.Limits().MaxObjectBytes, x)
	case errors.Is(err, blob.ErrRange):
		f.fail(w, http.StatusRequestedRangeNotSatisfiable, gateway.Errorf(schemas.CodeInvalidParams, "Range not satisfiable").
			With("reason", "range_not_satisfiable").With("max_range_bytes", f.store.Limits().MaxRangeBytes), x)
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		f.fail(w, http.StatusServiceUnavailable, gateway.NewError(schemas.CodeCancelled), x)
	default:
		f.log.Error("blob store", "trace_id", x.traceID, "err", err)
		f.fail(w, http.StatusServiceUnavailable, gateway.Errorf(schemas.CodeUnavailable, "The blob store is unavailable"), x)
	}
}

// fail writes the gateway's JSON error body with status.
func (*Face) fail(w http.ResponseWriter, status int, err *gateway.Error, x *exchange) {
	x.code = err.Code()
	faces.WriteHTTPError(w, status, err, x.traceID, faces.EncodingJSON)
}

// limitReader reads at most left bytes and fails with blob.ErrTooLarge past them.
type limitReader struct {
	r    io.Reader
	left int64
	over bool
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left < 0 {
		l.over = true
		return 0, blob.ErrTooLarge
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		l.over = true
		return 0, blob.ErrTooLarge
	}
	return n, err
}
