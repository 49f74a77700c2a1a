package agentlink_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/agentlink"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state/blob"
)

// blobURLs returns BlobURLs over a directory store holding "in/data" (16 bytes), and the
// signer that verifies its URLs.
func blobURLs(t *testing.T, allowExternal bool) (*agentlink.BlobURLs, *blob.Signer) {
	t.Helper()
	st, err := blob.OpenDir(t.TempDir(), blob.Limits{MaxObjectBytes: 1 << 10, MaxRangeBytes: 1 << 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(t.Context(), "in/data", bytes.NewReader([]byte("0123456789abcdef")), 16); err != nil {
		t.Fatal(err)
	}
	signer, err := blob.NewSigner(blob.RandomKey(), nil)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := blob.NewRefs(blob.RefsOptions{Store: st, Signer: signer, PublicURL: "http://gw.example:8080", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return agentlink.NewBlobURLs(func() *blob.Refs { return refs }, allowExternal), signer
}

func TestBlobURLsFetch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		ref           agentlink.DataRef
		allowExternal bool
		wantOff       int64
		wantLen       int64
		wantURL       string // for a ref that passes untouched
		wantReason    string // "" succeeds
	}{
		{name: "whole", ref: agentlink.DataRef{URI: "blob:in/data"}, wantLen: 16},
		{name: "range", ref: agentlink.DataRef{URI: "blob:in/data", Offset: 4, Length: 6}, wantOff: 4, wantLen: 6},
		{name: "offset to the end", ref: agentlink.DataRef{URI: "blob:in/data", Offset: 10}, wantOff: 10, wantLen: 6},
		{name: "range past the end", ref: agentlink.DataRef{URI: "blob:in/data", Offset: 10, Length: 7}, wantReason: "outside the object"},
		{name: "offset past the end", ref: agentlink.DataRef{URI: "blob:in/data", Offset: 17}, wantReason: "outside the object"},
		{name: "huge offset", ref: agentlink.DataRef{URI: "blob:in/data", Offset: 1 << 63, Length: 1}, wantReason: "outside the object"},
		{name: "missing", ref: agentlink.DataRef{URI: "blob:in/nope"}, wantReason: "no such blob object"},
		{name: "invalid key", ref: agentlink.DataRef{URI: "blob:../etc/passwd"}, wantReason: "not a valid blob: ref"},
		{name: "external refused", ref: agentlink.DataRef{URI: "http://169.254.169.254/latest"}, wantReason: "only blob: data refs"},
		{name: "external allowed", ref: agentlink.DataRef{URI: "https://example.com/x"}, allowExternal: true, wantURL: "https://example.com/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, signer := blobURLs(t, tt.allowExternal)
			got, err := b.Fetch(t.Context(), tt.ref, "task-1", "agent-1")
			if tt.wantReason != "" {
				e := gateway.AsError(err)
				if e == nil || e.Code() != schemas.CodeInvalidParams || !strings.Contains(e.Data()["reason"].(string), tt.wantReason) {
					t.Fatalf("Fetch = %q, %v; want INVALID_PARAMS with reason %q", got, err, tt.wantReason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantURL != "" {
				if got != tt.wantURL {
					t.Fatalf("Fetch = %q, want %q untouched", got, tt.wantURL)
				}
				return
			}
			u, err := url.Parse(got)
			if err != nil || u.Host != "gw.example:8080" || u.Path != blob.EndpointPath+"in/data" {
				t.Fatalf("Fetch = %q", got)
			}
			g, err := signer.Verify(http.MethodGet, "in/data", u.RawQuery)
			if err != nil {
				t.Fatal(err)
			}
			if g.Task != "task-1" || g.Agent != "agent-1" || g.Offset != tt.wantOff || g.Length != tt.wantLen {
				t.Errorf("grant %+v; want task-1, agent-1, offset %d, length %d", g, tt.wantOff, tt.wantLen)
			}
		})
	}
}

func TestBlobURLsWithoutRefs(t *testing.T) {
	t.Parallel()
	b := agentlink.NewBlobURLs(func() *blob.Refs { return nil }, false)
	if _, err := b.Fetch(t.Context(), agentlink.DataRef{URI: "blob:in/data"}, "t", "a"); gateway.AsError(err).Code() != schemas.CodeUnavailable {
		t.Errorf("Fetch without refs: %v", err)
	}
	if _, _, err := b.Upload(t.Context(), "t", "a", 0); gateway.AsError(err).Code() != schemas.CodeUnavailable {
		t.Errorf("Upload without refs: %v", err)
	}
}

func TestBlobURLsUpload(t *testing.T) {
	t.Parallel()
	b, signer := blobURLs(t, false)
	up, ref, err := b.Upload(t.Context(), "task-2", "agent-2", 100)
	if err != nil {
		t.Fatal(err)
	}
	key, err := blob.ParseRef(ref)
	if err != nil || !strings.HasPrefix(key, "out/") {
		t.Fatalf("ref %q: %v", ref, err)
	}
	u, err := url.Parse(up)
	if err != nil || u.Path != blob.EndpointPath+key {
		t.Fatalf("upload URL %q for ref %q", up, ref)
	}
	g, err := signer.Verify(http.MethodPut, key, u.RawQuery)
	if err != nil || g.Task != "task-2" || g.Agent != "agent-2" || g.Length != 100 {
		t.Fatalf("grant %+v, %v", g, err)
	}
	if _, err := signer.Verify(http.MethodGet, key, u.RawQuery); !errors.Is(err, blob.ErrSignature) {
		t.Errorf("the upload URL verified for a GET: %v", err)
	}
}
