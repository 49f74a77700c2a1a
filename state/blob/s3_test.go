package blob_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/testproc"
	"github.com/gatehouse-dev/gatehouse/state/blob"
	"github.com/gatehouse-dev/gatehouse/state/blob/blobtest"
)

// The S3-compatible server the tests run: gofakes3, built by `make blob-tools` into
// .tmp/bin/gofakes3-$(GOFAKES3_VERSION) (make/s3.mk), or $GOFAKES3_BIN.
const (
	gofakes3Version = "v1.2.0"
	gofakes3Env     = "GOFAKES3_BIN"
	testBucket      = "gatehouse-test"
	startAttempts   = 3
)

// s3Server is one gofakes3 process on loopback.
type s3Server struct {
	addr      string
	transport *http.Transport
}

// startS3 runs gofakes3 for the test with an in-memory backend and one bucket, and stops it
// at the test's end.
func startS3(t *testing.T) *s3Server {
	t.Helper()
	bin := testproc.Lookup(t, "gofakes3", gofakes3Env, "run `make blob-tools`",
		filepath.Join(repoRoot(t), ".tmp", "bin", "gofakes3-"+gofakes3Version), "gofakes3")
	transport := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16}
	t.Cleanup(transport.CloseIdleConnections)
	dir := t.TempDir()
	for attempt := 1; ; attempt++ {
		addrs, err := testproc.FreeAddrs(1)
		if err != nil {
			t.Fatal(err)
		}
		p, err := testproc.Start(dir, bin, "gofakes3.log", "-backend", "memory", "-host", addrs[0],
			"-initialbucket", testBucket, "-quiet")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Stop(5 * time.Second) })
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		err = p.WaitReady(ctx, 20*time.Millisecond, func(ctx context.Context) error {
			return ping(ctx, transport, addrs[0])
		})
		cancel()
		if err == nil {
			return &s3Server{addr: addrs[0], transport: transport}
		}
		if !errors.Is(err, testproc.ErrExited) || attempt == startAttempts {
			t.Fatal(err)
		}
	}
}

// ping asks the server for the test bucket.
func ping(ctx context.Context, rt http.RoundTripper, addr string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, "http://"+addr+"/"+testBucket, nil)
	if err != nil {
		return err
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HEAD bucket: %s", resp.Status)
	}
	return nil
}

// repoRoot returns the directory of go.mod above the working directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// open returns a store of its own: the shared bucket under a fresh prefix.
func (s *s3Server) open(t *testing.T, lim blob.Limits) *blob.S3 {
	t.Helper()
	var id [8]byte
	_, _ = rand.Read(id[:])
	st, err := blob.OpenS3(blob.S3Options{
		Endpoint: s.addr, Bucket: testBucket, Region: "us-east-1", AccessKey: "test", SecretKey: "test-secret",
		Prefix: "t-" + hex.EncodeToString(id[:]) + "/", SpoolDir: t.TempDir(), Transport: s.transport,
	}, lim)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestS3Contract(t *testing.T) {
	srv := startS3(t)
	blobtest.RunStore(t, func(t *testing.T, lim blob.Limits) blob.Store { return srv.open(t, lim) })
}

// TestS3Presigned reads an object through presigned URLs: the whole object, and a range
// whose Range header is part of the signature.
func TestS3Presigned(t *testing.T) {
	srv := startS3(t)
	st := srv.open(t, blobtest.Limits)
	data := "0123456789abcdef"
	if _, err := st.Create(t.Context(), "in/x", strings.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: srv.transport}
	tests := []struct {
		name   string
		off, n int64
		whole  bool
		header string
		want   string
	}{
		{"whole", 0, 16, true, "", data},
		{"range", 4, 6, false, "bytes=4-9", data[4:10]},
	}
	for _, tt := range tests {
		u, err := st.PresignGet(t.Context(), "in/x", tt.off, tt.n, tt.whole, time.Minute)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
		if tt.header != "" {
			req.Header.Set("Range", tt.header)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if string(body) != tt.want || resp.StatusCode/100 != 2 {
			t.Errorf("%s: GET presigned = %s %q; want %q", tt.name, resp.Status, body, tt.want)
		}
		if !strings.Contains(u, "X-Amz-Expires=60") || !strings.Contains(u, "X-Amz-Signature=") {
			t.Errorf("%s: URL %s: want a SigV4 presigned URL expiring in 60 s", tt.name, u)
		}
	}
}

// TestS3Refs: with presigning on, Fetch hands out object-store URLs that read the bytes
// straight from the S3 server; uploads still go through the gateway's endpoint.
func TestS3Refs(t *testing.T) {
	srv := startS3(t)
	st := srv.open(t, blobtest.Limits)
	if _, err := st.Create(t.Context(), "in/y", strings.NewReader("presigned bytes"), 15); err != nil {
		t.Fatal(err)
	}
	signer, err := blob.NewSigner(blob.RandomKey(), nil)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := blob.NewRefs(blob.RefsOptions{Store: st, Signer: signer, PublicURL: "http://gw.test", TTL: time.Minute, Presign: true})
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: srv.transport}
	get := func(u, rangeHeader string) string {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
		if rangeHeader != "" {
			req.Header.Set("Range", rangeHeader)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	whole, err := refs.Fetch(t.Context(), "blob:in/y", "task", "agent")
	if err != nil || !strings.HasPrefix(whole, "http://"+srv.addr+"/") {
		t.Fatalf("Fetch = %q, %v; want a URL of the S3 server", whole, err)
	}
	if got := get(whole, ""); got != "presigned bytes" {
		t.Errorf("GET presigned = %q", got)
	}
	part, err := refs.FetchRange(t.Context(), "blob:in/y", "task", "agent", 10, 5)
	if err != nil {
		t.Fatal(err)
	}
	if got := get(part, "bytes=10-14"); got != "bytes" {
		t.Errorf("GET presigned range = %q", got)
	}
	up, _, err := refs.Upload(t.Context(), "task", "agent", 0)
	if err != nil || !strings.HasPrefix(up, "http://gw.test/blobs/out/") {
		t.Errorf("Upload = %q, %v; want the gateway's endpoint", up, err)
	}
}
