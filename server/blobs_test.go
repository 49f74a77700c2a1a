package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/state/blob"
)

// blobsYAML serves the blobs section over a directory (%s), with two API keys: writer holds
// blobs:write, reader does not.
const blobsYAML = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth:
  api_keys:
    - {name: writer, hash: %q, scopes: ["blobs:write"]}
    - {name: reader, hash: %q, scopes: [other]}
blobs:
  dir: %s
  max_object_bytes: 100
  url_ttl: 1m
  signing_key: "%s"
`

// blobCall sends one request to the boundary.
func blobCall(t *testing.T, method, url string, body []byte, header ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, out
}

// TestBlobsEndToEnd: through the boundary listener, a caller uploads, an agent reads a range
// through a URL the server's Refs issued and writes an output once; a caller without the
// scope and an oversized body are refused.
func TestBlobsEndToEnd(t *testing.T) {
	ts := start(t, fmt.Sprintf(blobsYAML, apiKeyHash("writer-key"), apiKeyHash("reader-key"), t.TempDir(),
		strings.Repeat("k", blob.MinKeyBytes)), nil)
	refs := ts.BlobRefs()
	if refs == nil {
		t.Fatal("no Refs with a blobs section")
	}
	status, _, body := blobCall(t, http.MethodPost, ts.base+"/blobs/", []byte("input bytes"), "X-API-Key", "writer-key")
	var created struct {
		Ref    string `json:"ref"`
		Size   int64  `json:"size"`
		SHA256 string `json:"sha256"`
	}
	if status != http.StatusCreated || json.Unmarshal(body, &created) != nil || created.Size != 11 {
		t.Fatalf("upload: %d %s", status, body)
	}
	u, err := refs.FetchRange(t.Context(), created.Ref, "task-1", "agent-a", 6, 5)
	if err != nil || !strings.HasPrefix(u, ts.base+"/blobs/") {
		t.Fatalf("FetchRange = %q, %v; want a URL under %s/blobs/", u, err, ts.base)
	}
	if status, _, body := blobCall(t, http.MethodGet, u, nil); status != http.StatusPartialContent || string(body) != "bytes" {
		t.Errorf("GET range: %d %q", status, body)
	}
	put, _, err := refs.Upload(t.Context(), "task-1", "agent-a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if status, _, body := blobCall(t, http.MethodPut, put, bytes.Repeat([]byte("o"), 100)); status != http.StatusCreated {
		t.Errorf("PUT of exactly max_object_bytes: %d %s", status, body)
	}
	if status, _, _ := blobCall(t, http.MethodPut, put, []byte("again")); status != http.StatusConflict {
		t.Errorf("second PUT: %d; want 409", status)
	}
	tests := []struct {
		name, key string
		n         int
		want      int
	}{
		{"no scope", "reader-key", 1, http.StatusForbidden},
		{"no credential", "", 1, http.StatusUnauthorized},
		{"max + 1", "writer-key", 101, http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		var h []string
		if tt.key != "" {
			h = []string{"X-API-Key", tt.key}
		}
		if status, _, body := blobCall(t, http.MethodPost, ts.base+"/blobs/", bytes.Repeat([]byte("i"), tt.n), h...); status != tt.want {
			t.Errorf("%s: %d %s; want %d", tt.name, status, body, tt.want)
		}
	}
}

// TestBlobsOff: without a blobs section /blobs/ is not served and no Refs exist.
func TestBlobsOff(t *testing.T) {
	ts := start(t, "server:\n  boundary: {addr: \"127.0.0.1:0\"}\n  admin: {addr: \"127.0.0.1:0\"}\n", nil)
	if ts.BlobRefs() != nil {
		t.Error("Refs without a blobs section")
	}
	if status, _, body := blobCall(t, http.MethodGet, ts.base+"/blobs/x", nil); status != http.StatusNotFound {
		t.Errorf("GET /blobs/x: %d %s; want 404", status, body)
	}
}

// TestBlobsConfig: the section's problems are positioned; defaults apply.
func TestBlobsConfig(t *testing.T) {
	base := "server:\n  boundary: {addr: \"127.0.0.1:0\"}\n  admin: {addr: \"127.0.0.1:0\"}\n"
	tests := []struct{ name, section, want string }{
		{"dir missing", "blobs: {}", "blobs.dir"},
		{"unknown key", "blobs: {dir: d, size: 1}", "size"},
		{"short signing key", "blobs: {dir: d, signing_key: short}", "signing_key"},
		{"s3 without bucket", "blobs: {store: s3, s3: {endpoint: 'h:9000'}}", "bucket"},
		{"ttl too long", "blobs: {dir: d, url_ttl: 200h}", "blobs.url_ttl"},
		{"bad public URL", "blobs: {dir: d, public_url: 'gw:8080'}", "public_url"},
	}
	for _, tt := range tests {
		_, err := Parse("test.yaml", []byte(base+tt.section+"\n"))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v; want an error naming %s", tt.name, err, tt.want)
		}
	}
	cfg, err := Parse("test.yaml", []byte(base+"blobs: {dir: d}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if b := cfg.Blobs; b.Store != blob.StoreDir || b.URLTTL != blob.DefaultURLTTL || b.MaxObjectBytes != blob.DefaultMaxObjectBytes || b.WriteScope != blob.DefaultScope {
		t.Errorf("defaults: %+v", b)
	}
}

// TestBlobsAcrossReplicas: a URL issued by one replica is served by another that shares the
// store and the signing key, and refused by one with another key.
func TestBlobsAcrossReplicas(t *testing.T) {
	dir := t.TempDir()
	replica := func(key string) *testServer {
		return start(t, fmt.Sprintf(blobsYAML, apiKeyHash("writer-key"), apiKeyHash("reader-key"), dir, key), nil)
	}
	shared := strings.Repeat("s", blob.MinKeyBytes)
	a, b, other := replica(shared), replica(shared), replica(strings.Repeat("o", blob.MinKeyBytes))
	status, _, body := blobCall(t, http.MethodPost, a.base+"/blobs/", []byte("shared bytes"), "X-API-Key", "writer-key")
	var created struct {
		Ref string `json:"ref"`
	}
	if status != http.StatusCreated || json.Unmarshal(body, &created) != nil {
		t.Fatalf("upload to A: %d %s", status, body)
	}
	u, err := a.BlobRefs().Fetch(t.Context(), created.Ref, "task-1", "agent-a")
	if err != nil {
		t.Fatal(err)
	}
	path := strings.TrimPrefix(u, a.base)
	if status, _, body := blobCall(t, http.MethodGet, b.base+path, nil); status != http.StatusOK || string(body) != "shared bytes" {
		t.Errorf("A's URL at B: %d %q; want 200 and the bytes", status, body)
	}
	if status, _, body := blobCall(t, http.MethodGet, other.base+path, nil); status != http.StatusUnauthorized {
		t.Errorf("A's URL at a replica with another key: %d %s; want 401", status, body)
	}
}
