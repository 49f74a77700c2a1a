package blob_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/state/blob"
)

func newRefs(t *testing.T, now *time.Time) (*blob.Refs, *blob.Signer, blob.Store) {
	t.Helper()
	st, err := blob.OpenDir(t.TempDir(), blob.Limits{MaxObjectBytes: 100}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := newSigner(t, now)
	r, err := blob.NewRefs(blob.RefsOptions{Store: st, Signer: s, PublicURL: "https://gw.example:8443/edge/", TTL: time.Minute,
		Now: func() time.Time { return *now }})
	if err != nil {
		t.Fatal(err)
	}
	return r, s, st
}

// verifyURL checks that u is under the public URL's blob endpoint and returns its grant.
func verifyURL(t *testing.T, s *blob.Signer, method, u string) blob.Grant {
	t.Helper()
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	key, ok := strings.CutPrefix(parsed.Path, "/edge"+blob.EndpointPath)
	if parsed.Scheme != "https" || parsed.Host != "gw.example:8443" || !ok {
		t.Fatalf("URL %s: want https://gw.example:8443/edge/blobs/KEY", u)
	}
	g, err := s.Verify(method, key, parsed.RawQuery)
	if err != nil {
		t.Fatalf("Verify(%s): %v", u, err)
	}
	return g
}

func TestRefsFetch(t *testing.T) {
	now := t0
	r, s, st := newRefs(t, &now)
	if _, err := st.Create(t.Context(), "in/data", strings.NewReader("0123456789"), 10); err != nil {
		t.Fatal(err)
	}
	u, err := r.Fetch(t.Context(), "blob:in/data", "task-1", "agent-a")
	if err != nil {
		t.Fatal(err)
	}
	g := verifyURL(t, s, http.MethodGet, u)
	want := blob.Grant{Method: http.MethodGet, Key: "in/data", Task: "task-1", Agent: "agent-a", Expires: t0.Add(time.Minute), Length: 10}
	if g != want {
		t.Errorf("grant = %+v; want %+v", g, want)
	}
	u, err = r.FetchRange(t.Context(), "blob:in/data", "task-1", "agent-a", 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if g := verifyURL(t, s, http.MethodGet, u); g.Offset != 2 || g.Length != 3 {
		t.Errorf("range grant = %+v; want offset 2, length 3", g)
	}
	tests := []struct {
		name, ref, task string
		off, n          int64
		wantErr         error
	}{
		{"not a ref", "in/data", "task-1", 0, 1, blob.ErrInvalidRef},
		{"traversal", "blob:../x", "task-1", 0, 1, blob.ErrInvalidRef},
		{"missing", "blob:in/none", "task-1", 0, 1, blob.ErrNotFound},
		{"past the end", "blob:in/data", "task-1", 5, 6, blob.ErrRange},
	}
	for _, tt := range tests {
		if _, err := r.FetchRange(t.Context(), tt.ref, tt.task, "agent-a", tt.off, tt.n); !errors.Is(err, tt.wantErr) {
			t.Errorf("%s: FetchRange = %v; want %v", tt.name, err, tt.wantErr)
		}
	}
	if _, err := r.Fetch(t.Context(), "blob:in/data", "", "agent-a"); err == nil {
		t.Error("Fetch without a task id succeeded")
	}
}

func TestRefsUpload(t *testing.T) {
	now := t0
	r, s, _ := newRefs(t, &now)
	tests := []struct{ maxBytes, want int64 }{{10, 10}, {0, 100}, {101, 100}, {100, 100}}
	seen := map[string]bool{}
	for _, tt := range tests {
		u, ref, err := r.Upload(t.Context(), "task-1", "agent-a", tt.maxBytes)
		if err != nil {
			t.Fatal(err)
		}
		g := verifyURL(t, s, http.MethodPut, u)
		key, err := blob.ParseRef(ref)
		if err != nil || key != g.Key || g.Length != tt.want || g.Task != "task-1" || g.Agent != "agent-a" || seen[key] {
			t.Errorf("Upload(%d) = grant %+v, ref %q (%v); want length %d, a fresh key", tt.maxBytes, g, ref, err, tt.want)
		}
		seen[key] = true
		if _, err := s.Verify(http.MethodGet, g.Key, strings.SplitN(u, "?", 2)[1]); !errors.Is(err, blob.ErrSignature) {
			t.Errorf("an upload URL used for GET: %v; want ErrSignature", err)
		}
	}
}

func TestParsePublicURL(t *testing.T) {
	for _, bad := range []string{"", "gw:8080", "ftp://gw", "http://", "http://u:p@gw", "http://gw/?q=1", "http://gw/#f"} {
		if _, err := blob.ParsePublicURL(bad); err == nil {
			t.Errorf("ParsePublicURL(%q) accepted", bad)
		}
	}
	if u, err := blob.ParsePublicURL("http://10.0.0.1:8080/"); err != nil || u.String() != "http://10.0.0.1:8080" {
		t.Errorf("ParsePublicURL = %v, %v", u, err)
	}
}
