package blobface_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/faces"
	blobface "github.com/gatehouse-dev/gatehouse/faces/blob"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state/blob"
)

const maxObject = 64

// fakeGateway authenticates bearer "writer" with the write scope, "reader" without it and
// "blobreader" with the read scope.
type fakeGateway struct {
	held atomic.Int64
	pipe *faces.Pipeline // nil: no access log
}

func (g *fakeGateway) Acquire() faces.Runtime { g.held.Add(1); return fakeRuntime{g} }

type fakeRuntime struct{ g *fakeGateway }

func (r fakeRuntime) Pipeline() *faces.Pipeline            { return r.g.pipe }
func (r fakeRuntime) Authenticator() gateway.Authenticator { return r }
func (r fakeRuntime) Release()                             { r.g.held.Add(-1) }

func (fakeRuntime) Authenticate(_ context.Context, c gateway.Credentials) (gateway.Principal, error) {
	switch c.Bearer {
	case "writer":
		return gateway.Principal{Subject: "w", Scopes: []string{"other", blob.DefaultScope}}, nil
	case "reader":
		return gateway.Principal{Subject: "r", Scopes: []string{"other"}}, nil
	case "blobreader":
		return gateway.Principal{Subject: "br", Scopes: []string{blob.DefaultReadScope}}, nil
	}
	return gateway.Principal{}, gateway.NewError(schemas.CodeAuthentication)
}

// env is one blob endpoint over a directory store, with the Refs that issue its URLs.
type env struct {
	srv    *httptest.Server
	refs   *blob.Refs
	signer *blob.Signer
	store  blob.Store
	now    *atomic.Int64 // Unix seconds of the clock
	gw     *fakeGateway
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{now: &atomic.Int64{}, gw: &fakeGateway{}}
	e.now.Store(time.Now().Unix())
	clock := func() time.Time { return time.Unix(e.now.Load(), 0) }
	st, err := blob.OpenDir(t.TempDir(), blob.Limits{MaxObjectBytes: maxObject, MaxRangeBytes: maxObject}, clock)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := blob.NewSigner(blob.RandomKey(), clock)
	if err != nil {
		t.Fatal(err)
	}
	e.store, e.signer = st, signer
	e.srv = httptest.NewServer(blobface.New(blobface.Options{Store: st, Signer: signer, Gateway: e.gw}))
	t.Cleanup(e.srv.Close)
	e.refs, err = blob.NewRefs(blob.RefsOptions{Store: st, Signer: signer, PublicURL: e.srv.URL, TTL: time.Minute, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if n := e.gw.held.Load(); n != 0 {
			t.Errorf("%d runtimes still held", n)
		}
	})
	return e
}

// response is one answer, its error body decoded when it has one.
type response struct {
	status int
	header http.Header
	body   []byte
	code   schemas.Code
	data   map[string]any
}

func do(t *testing.T, method, u string, body io.Reader, header ...string) response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if b, ok := body.(*bytes.Reader); ok && b.Len() >= 0 && header == nil {
		req.ContentLength = int64(b.Len())
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	r := response{status: resp.StatusCode, header: resp.Header}
	r.body, _ = io.ReadAll(resp.Body)
	var env struct {
		Error struct {
			Code schemas.Code   `json:"code"`
			Data map[string]any `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal(r.body, &env) == nil {
		r.code, r.data = env.Error.Code, env.Error.Data
	}
	return r
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// upload stores data as caller "writer" and returns its ref.
func (e *env) upload(t *testing.T, data []byte) string {
	t.Helper()
	r := do(t, http.MethodPost, e.srv.URL+blob.EndpointPath, bytes.NewReader(data), "Authorization", "Bearer writer")
	var c blobface.Created
	if r.status != http.StatusCreated || json.Unmarshal(r.body, &c) != nil {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	if c.Size != int64(len(data)) || c.SHA256 != sum(data) || !strings.HasPrefix(c.Ref, "blob:in/") {
		t.Fatalf("upload answered %+v; want size %d, sha256 %s", c, len(data), sum(data))
	}
	return c.Ref
}

// TestRoundTrip: a caller uploads, an agent reads it whole and by ranges through signed URLs,
// writes an output through a signed PUT, and the output reads back.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	data := []byte("0123456789abcdefghijklmnopqrstuvwxyz")
	ref := e.upload(t, data)

	whole, err := e.refs.Fetch(t.Context(), ref, "task-1", "agent-a")
	if err != nil {
		t.Fatal(err)
	}
	r := do(t, http.MethodGet, whole, nil)
	if r.status != http.StatusOK || !bytes.Equal(r.body, data) || r.header.Get("Repr-Digest") == "" {
		t.Fatalf("GET whole: %d %q (Repr-Digest %q)", r.status, r.body, r.header.Get("Repr-Digest"))
	}
	part, err := e.refs.FetchRange(t.Context(), ref, "task-1", "agent-a", 10, 10) // bytes 10..19
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, rangeHeader string
		wantStatus        int
		want, wantRange   string
	}{
		{"no Range: the grant", "", http.StatusPartialContent, "abcdefghij", "bytes 10-19/36"},
		{"inside", "bytes=12-15", http.StatusPartialContent, "cdef", "bytes 12-15/36"},
		{"the whole grant", "bytes=10-19", http.StatusPartialContent, "abcdefghij", "bytes 10-19/36"},
		{"open end inside the grant", "bytes=15-", http.StatusRequestedRangeNotSatisfiable, "", "bytes */36"},
		{"before the grant", "bytes=9-12", http.StatusRequestedRangeNotSatisfiable, "", "bytes */36"},
		{"after the grant", "bytes=15-20", http.StatusRequestedRangeNotSatisfiable, "", "bytes */36"},
		{"suffix outside", "bytes=-5", http.StatusRequestedRangeNotSatisfiable, "", "bytes */36"},
		{"several ranges", "bytes=10-11,12-13", http.StatusRequestedRangeNotSatisfiable, "", "bytes */36"},
		{"malformed", "bytes=x-y", http.StatusRequestedRangeNotSatisfiable, "", "bytes */36"},
		{"past the object", "bytes=40-41", http.StatusRequestedRangeNotSatisfiable, "", "bytes */36"},
	}
	for _, tt := range tests {
		var h []string
		if tt.rangeHeader != "" {
			h = []string{"Range", tt.rangeHeader}
		}
		r := do(t, http.MethodGet, part, nil, h...)
		if r.status != tt.wantStatus || r.header.Get("Content-Range") != tt.wantRange ||
			(tt.want != "" && string(r.body) != tt.want) {
			t.Errorf("%s: %d %q Content-Range %q; want %d %q %q", tt.name, r.status, r.body, r.header.Get("Content-Range"), tt.wantStatus, tt.want, tt.wantRange)
		}
		if tt.wantStatus == http.StatusRequestedRangeNotSatisfiable && (r.code != schemas.CodeInvalidParams || r.data["reason"] != "range_not_satisfiable") {
			t.Errorf("%s: error %d %v; want INVALID_PARAMS range_not_satisfiable", tt.name, r.code, r.data)
		}
	}
	if r := do(t, http.MethodGet, whole, nil, "Range", "bytes=-6"); r.status != http.StatusPartialContent || string(r.body) != "uvwxyz" {
		t.Errorf("suffix range of a whole grant: %d %q", r.status, r.body)
	}
	for _, bad := range []string{"bytes=--1", "bytes=-+1", "bytes=+1-2", "bytes=1--2", "bytes=0x1-2"} {
		if r := do(t, http.MethodGet, whole, nil, "Range", bad); r.status != http.StatusRequestedRangeNotSatisfiable {
			t.Errorf("Range %q: %d %q; want 416", bad, r.status, r.body)
		}
	}

	put, outRef, err := e.refs.Upload(t.Context(), "task-1", "agent-a", 0)
	if err != nil {
		t.Fatal(err)
	}
	out := []byte("the result")
	r = do(t, http.MethodPut, put, bytes.NewReader(out))
	var c blobface.Created
	if r.status != http.StatusCreated || json.Unmarshal(r.body, &c) != nil || c.Ref != outRef || c.SHA256 != sum(out) {
		t.Fatalf("PUT: %d %s; want 201 naming %s", r.status, r.body, outRef)
	}
	back, _ := e.refs.Fetch(t.Context(), outRef, "task-2", "agent-b")
	if r := do(t, http.MethodGet, back, nil); r.status != http.StatusOK || !bytes.Equal(r.body, out) {
		t.Errorf("reading the output: %d %q", r.status, r.body)
	}
}

// TestPutLimits: exactly the granted size is stored, one more byte is refused (announced or
// streamed), and a key is written once.
func TestPutLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		name       string
		grant, n   int
		chunked    bool
		wantStatus int
	}{
		{"exactly the grant", 10, 10, false, http.StatusCreated},
		{"grant + 1", 10, 11, false, http.StatusRequestEntityTooLarge},
		{"grant + 1, streamed", 10, 11, true, http.StatusRequestEntityTooLarge},
		{"exactly the store's max", 0, maxObject, true, http.StatusCreated},
		{"store max + 1", 0, maxObject + 1, false, http.StatusRequestEntityTooLarge},
		{"store max + 1, streamed", 0, maxObject + 1, true, http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		u, ref, err := e.refs.Upload(t.Context(), "t", "a", int64(tt.grant))
		if err != nil {
			t.Fatal(err)
		}
		var body io.Reader = bytes.NewReader(bytes.Repeat([]byte("x"), tt.n))
		if tt.chunked {
			body = io.MultiReader(body) // hides the length: sent chunked
		}
		r := do(t, http.MethodPut, u, body)
		if r.status != tt.wantStatus {
			t.Errorf("%s: PUT = %d %s; want %d", tt.name, r.status, r.body, tt.wantStatus)
		}
		key, _ := blob.ParseRef(ref)
		_, statErr := e.store.Stat(t.Context(), key)
		if stored := statErr == nil; stored != (tt.wantStatus == http.StatusCreated) {
			t.Errorf("%s: stored = %v after %d", tt.name, stored, r.status)
		}
		if tt.wantStatus == http.StatusRequestEntityTooLarge && r.code != schemas.CodePayloadTooLarge {
			t.Errorf("%s: error code %d; want PAYLOAD_TOO_LARGE", tt.name, r.code)
		}
		if tt.wantStatus == http.StatusCreated {
			if r := do(t, http.MethodPut, u, strings.NewReader("again")); r.status != http.StatusConflict || r.data["reason"] != "exists" {
				t.Errorf("%s: second PUT = %d %s; want 409 exists", tt.name, r.status, r.body)
			}
		}
	}
}

// TestSignedURLRefusals: an expired URL and one with any field changed are refused with 401.
func TestSignedURLRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ref := e.upload(t, []byte("secret bytes"))
	get, _ := e.refs.FetchRange(t.Context(), ref, "task-1", "agent-a", 0, 6)
	other := e.upload(t, []byte("other bytes"))
	otherKey, _ := blob.ParseRef(other)
	put, _, _ := e.refs.Upload(t.Context(), "task-1", "agent-a", 10)
	with := func(raw, name, value string) string {
		u, _ := url.Parse(raw)
		q := u.Query()
		q.Set(name, value)
		u.RawQuery = q.Encode()
		return u.String()
	}
	withPath := func(raw, path string) string {
		u, _ := url.Parse(raw)
		u.Path = path
		return u.String()
	}
	tests := []struct {
		name, method, url, reason string
	}{
		{"task", http.MethodGet, with(get, blob.ParamTask, "task-2"), "bad_signature"},
		{"agent", http.MethodGet, with(get, blob.ParamAgent, "agent-b"), "bad_signature"},
		{"expiry", http.MethodGet, with(get, blob.ParamExpires, "99999999999"), "bad_signature"},
		{"offset", http.MethodGet, with(get, blob.ParamOffset, "1"), "bad_signature"},
		{"length", http.MethodGet, with(get, blob.ParamLength, "12"), "bad_signature"},
		{"signature", http.MethodGet, with(get, blob.ParamSignature, strings.Repeat("A", 43)), "bad_signature"},
		{"key", http.MethodGet, withPath(get, blob.EndpointPath+otherKey), "bad_signature"},
		{"method: a GET URL used to PUT", http.MethodPut, get, "bad_signature"},
		{"method: a PUT URL used to GET", http.MethodGet, put, "bad_signature"},
		{"no signature", http.MethodGet, strings.Split(get, "?")[0], "unsigned"},
		{"malformed expiry", http.MethodGet, with(get, blob.ParamExpires, "soon"), "unsigned"},
	}
	for _, tt := range tests {
		r := do(t, tt.method, tt.url, strings.NewReader("12345"))
		if r.status != http.StatusUnauthorized || r.code != schemas.CodeAuthentication || r.data["reason"] != tt.reason {
			t.Errorf("%s: %d %s; want 401 AUTHENTICATION_FAILED %s", tt.name, r.status, r.body, tt.reason)
		}
	}
	if r := do(t, http.MethodGet, get, nil); r.status != http.StatusPartialContent || string(r.body) != "secret" {
		t.Fatalf("the untouched URL: %d %q", r.status, r.body)
	}
	e.now.Add(60) // the URL lives a minute
	r := do(t, http.MethodGet, get, nil)
	if r.status != http.StatusUnauthorized || r.data["reason"] != "expired" || r.data["recovery_hint"] == nil {
		t.Errorf("expired URL: %d %s; want 401 expired with a recovery hint", r.status, r.body)
	}
}

// TestPathTraversal: a key that would leave the store is refused before anything else.
func TestPathTraversal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, path := range []string{
		"/blobs/../../etc/passwd", "/blobs/%2e%2e/%2e%2e/etc/passwd", "/blobs/in/../../x", "/blobs//etc/passwd",
		"/blobs/in%2f..%2f..%2fx", "/blobs/.hidden", "/blobs/a%00b",
	} {
		r := do(t, http.MethodGet, e.srv.URL+path+"?task=t&agent=a&exp=1&off=0&len=1&sig=x", nil)
		if r.status != http.StatusBadRequest || r.data["reason"] != "invalid_key" {
			t.Errorf("GET %s: %d %s; want 400 invalid_key", path, r.status, r.body)
		}
	}
}

// TestCallerUpload: the caller's credential and scope are checked, and the size limit holds
// at its edge.
func TestCallerUpload(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		name, bearer string
		n            int
		wantStatus   int
		wantCode     schemas.Code
	}{
		{"no credential", "", 1, http.StatusUnauthorized, schemas.CodeAuthentication},
		{"bad credential", "nobody", 1, http.StatusUnauthorized, schemas.CodeAuthentication},
		{"no scope", "reader", 1, http.StatusForbidden, schemas.CodeInsufficientScope},
		{"exactly max", "writer", maxObject, http.StatusCreated, 0},
		{"max + 1", "writer", maxObject + 1, http.StatusRequestEntityTooLarge, schemas.CodePayloadTooLarge},
	}
	for _, tt := range tests {
		h := []string{"Content-Type", "application/octet-stream"}
		if tt.bearer != "" {
			h = append(h, "Authorization", "Bearer "+tt.bearer)
		}
		r := do(t, http.MethodPost, e.srv.URL+blob.EndpointPath, bytes.NewReader(bytes.Repeat([]byte("y"), tt.n)), h...)
		if r.status != tt.wantStatus || r.code != tt.wantCode {
			t.Errorf("%s: %d %s; want %d code %d", tt.name, r.status, r.body, tt.wantStatus, tt.wantCode)
		}
		if r.status == http.StatusUnauthorized && !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: 401 without a Bearer challenge", tt.name)
		}
		if r.status == http.StatusForbidden && !strings.Contains(r.header.Get("WWW-Authenticate"), blob.DefaultScope) {
			t.Errorf("%s: 403 without the scope in its challenge: %q", tt.name, r.header.Get("WWW-Authenticate"))
		}
	}
}

// TestCallerRead: a caller reads an object with its credential instead of a signed URL,
// whole or by a Range, when it holds the read scope.
func TestCallerRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	data := []byte("caller reads this")
	key := strings.TrimPrefix(e.upload(t, data), "blob:")
	u := e.srv.URL + blob.EndpointPath + key
	tests := []struct {
		name, bearer, rng string
		wantStatus        int
		wantCode          schemas.Code
		wantBody          string
	}{
		{"no credential", "", "", http.StatusUnauthorized, schemas.CodeAuthentication, ""},
		{"bad credential", "nobody", "", http.StatusUnauthorized, schemas.CodeAuthentication, ""},
		{"write scope only", "writer", "", http.StatusForbidden, schemas.CodeInsufficientScope, ""},
		{"whole", "blobreader", "", http.StatusOK, 0, string(data)},
		{"range", "blobreader", "bytes=7-11", http.StatusPartialContent, 0, "reads"},
		{"range past the end", "blobreader", "bytes=100-200", http.StatusRequestedRangeNotSatisfiable, schemas.CodeInvalidParams, ""},
	}
	for _, tt := range tests {
		var h []string
		if tt.bearer != "" {
			h = append(h, "Authorization", "Bearer "+tt.bearer)
		}
		if tt.rng != "" {
			h = append(h, "Range", tt.rng)
		}
		r := do(t, http.MethodGet, u, nil, h...)
		if r.status != tt.wantStatus || r.code != tt.wantCode || (tt.wantBody != "" && string(r.body) != tt.wantBody) {
			t.Errorf("%s: %d %s; want %d code %d %q", tt.name, r.status, r.body, tt.wantStatus, tt.wantCode, tt.wantBody)
		}
		if r.status == http.StatusForbidden && !strings.Contains(r.header.Get("WWW-Authenticate"), blob.DefaultReadScope) {
			t.Errorf("%s: 403 without the read scope in its challenge: %q", tt.name, r.header.Get("WWW-Authenticate"))
		}
	}
	if r := do(t, http.MethodGet, e.srv.URL+blob.EndpointPath+"in/missing", nil, "Authorization", "Bearer blobreader"); r.status != http.StatusNotFound {
		t.Errorf("a missing object: %d %s", r.status, r.body)
	}
}

// TestOff: a nil face (no blobs section) answers 404.
func TestOff(t *testing.T) {
	t.Parallel()
	var f *blobface.Face
	srv := httptest.NewServer(f)
	defer srv.Close()
	if r := do(t, http.MethodGet, srv.URL+"/blobs/x", nil); r.status != http.StatusNotFound || r.code != schemas.CodeInvalidRequest {
		t.Errorf("GET on a nil face: %d %s; want 404", r.status, r.body)
	}
}

// syncBuffer is a log buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAccessLog: every request is an access line, as a call is: the operation, the code of a
// refusal, and the caller as a hash (the agent of a signed URL, the uploading caller).
func TestAccessLog(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	all := 1.0
	e := newEnv(t)
	e.gw.pipe = &faces.Pipeline{Access: observability.NewAccessLog(observability.LogConfig{
		Access: observability.AccessConfig{SampleRatio: &all}}, slog.New(slog.NewTextHandler(logs, nil)))}
	ref := e.upload(t, []byte("logged"))
	u, _ := e.refs.Fetch(t.Context(), ref, "task-1", "agent-a")
	do(t, http.MethodGet, u, nil)
	do(t, http.MethodGet, strings.Replace(u, "agent=agent-a", "agent=agent-b", 1), nil)
	want := []string{
		"method=blobs.upload protocol=http status=success code=0",
		"method=blobs.get protocol=http status=success code=0",
		"caller=" + observability.CallerHash("agent:agent-a"),
		"method=blobs.get protocol=http status=error code=4001",
	}
	for _, w := range want {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("access log lacks %q:\n%s", w, logs.String())
		}
	}
}
