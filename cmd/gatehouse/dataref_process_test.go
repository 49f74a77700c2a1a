package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/internal/testproc"
	agentlinkv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/agentlink/v1"
)

// dataRefConfig serves NEKTE, the agent link (loopback agents without a credential) and a
// blob store in a directory with 2s URLs and 1 KiB objects; callers are anonymous or carry
// a token of the development issuer.
func dataRefConfig(t *testing.T) string {
	t.Helper()
	return dataRefConfigStore(t, "  dir: "+filepath.Join(t.TempDir(), "blobs")+"\n")
}

// dataRefConfigStore is dataRefConfig with store, the blobs section's lines that choose
// the store.
func dataRefConfigStore(t *testing.T, store string) string {
	t.Helper()
	jwks, err := filepath.Abs(devJWKS)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	body := `auth:
  anonymous: {}
  jwt: {issuers: [{issuer: gatehouse-dev, audiences: [gatehouse], jwks_file: ` + jwks + `}]}
server: {internal: {addr: "127.0.0.1:0"}}
nekte: {}
agents:
  heartbeat_interval: 200ms
  missed_heartbeats: 3
  auth: {allow_loopback_anonymous: true}
blobs:
` + store + `  url_ttl: 2s
  max_object_bytes: 1024
  signing_key: ` + strings.Repeat("k", 32) + `
`
	cfg := filepath.Join(dir, "gatehouse.yaml")
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// blobToken mints a development token with scopes.
func blobToken(t *testing.T, scopes string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"token", "--key", devKey, "--sub", "carol", "--scope", scopes}, &stdout, &stderr); code != 0 {
		t.Fatalf("token: %s", stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

// blobBase is p's blob endpoint.
func (p *process) blobBase() string { return strings.TrimSuffix(p.rpc, "/rpc") + "/blobs/" }

// httpDo makes one request and returns its status, headers and body.
func httpDo(t *testing.T, method, u string, body []byte, header ...string) (int, http.Header, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// uploadBlob stores data as a caller holding blobs:write and returns its ref.
func uploadBlob(t *testing.T, p *process, token string, data []byte) string {
	t.Helper()
	status, _, body := httpDo(t, http.MethodPost, p.blobBase(), data, "Authorization", "Bearer "+token)
	var c struct {
		Ref    string
		Size   int
		SHA256 string
	}
	if status != http.StatusCreated || json.Unmarshal([]byte(body), &c) != nil || c.Size != len(data) || c.SHA256 != hexSum(data) {
		t.Fatalf("upload: %d %s", status, body)
	}
	return c.Ref
}

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestDataRefsThroughAgentProcesses: a caller uploads bytes, and demo-agent processes hash
// them through the signed URLs the gateway issues per task and agent, whole and by range.
func TestDataRefsThroughAgentProcesses(t *testing.T) {
	p := startProcess(t, dataRefConfig(t))
	for _, id := range []string{"h1", "h2"} {
		startAgent(t, p.internal, id, true)
	}
	capsWith(t, p, "agent.sha256")
	data := []byte("the quick brown fox jumps over the lazy dog")
	writer := blobToken(t, "blobs:write")
	if status, _, body := httpDo(t, http.MethodPost, p.blobBase(), data, "Authorization", "Bearer "+blobToken(t, "blobs:read")); status != http.StatusForbidden {
		t.Fatalf("an upload without blobs:write: %d %s", status, body)
	}
	ref := uploadBlob(t, p, writer, data)

	tests := []struct {
		name, method, params string
		want                 []byte // hashed bytes; nil: refused
		wantErr              string
	}{
		{"whole", "agent.sha256", `{"data_refs":[{"uri":%q}]}`, data, ""},
		{"range", "agent.sha256", `{"data_refs":[{"uri":%q,"offset":4,"length":5}]}`, data[4:9], ""},
		{"offset to the end", "agent.sha256", `{"data_refs":[{"uri":%q,"offset":40}]}`, data[40:], ""},
		{"nekte.invoke", "nekte.invoke", `{"cap":"agent.sha256","in":{"data_refs":[{"uri":%q,"length":3}]}}`, data[:3], ""},
		{"range past the end", "agent.sha256", `{"data_refs":[{"uri":%q,"offset":40,"length":10}]}`, nil, "the byte range is outside the object"},
		{"missing object", "agent.sha256", `{"data_refs":[{"uri":"blob:in/00000000000000000000000000000000"%.0s}]}`, nil, "no such blob object"},
		{"an arbitrary URL", "agent.sha256", `{"data_refs":[{"uri":"http://127.0.0.1:1/secret"%.0s}]}`, nil, "only blob: data refs are accepted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := p.rpcCall(t, "", tt.method, fmt.Sprintf(tt.params, ref))
			if tt.want == nil {
				if errorCode(r) != -32602 || !strings.Contains(r.body, tt.wantErr) {
					t.Fatalf("%s: %s; want -32602 naming %q", tt.name, r.body, tt.wantErr)
				}
				return
			}
			want := fmt.Sprintf(`"sha256":%q`, hexSum(tt.want))
			if errorCode(r) != 0 || !strings.Contains(r.body, want) || !strings.Contains(r.body, `"bytes":`+strconv.Itoa(len(tt.want))) {
				t.Fatalf("%s: %s; want %s", tt.name, r.body, want)
			}
		})
	}
}

// TestDataRefsThroughS3: the same through an S3-compatible store (gofakes3): agents read
// through presigned object-store URLs (presign on) or the gateway's endpoint (off).
func TestDataRefsThroughS3(t *testing.T) {
	bin := testproc.Lookup(t, "gofakes3", "GOFAKES3_BIN", "run `make blob-tools`",
		filepath.Join("..", "..", ".tmp", "bin", "gofakes3-v1.2.0"), "gofakes3")
	addrs, err := testproc.FreeAddrs(1)
	if err != nil {
		t.Fatal(err)
	}
	s3, err := testproc.Start(t.TempDir(), bin, "gofakes3.log", "-backend", "memory", "-host", addrs[0], "-initialbucket", "dataref", "-quiet")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s3.Stop(5 * time.Second) })
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := s3.WaitReady(ctx, 20*time.Millisecond, func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodHead, "http://"+addrs[0]+"/dataref", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, presign := range []bool{true, false} {
		t.Run(fmt.Sprintf("presign=%v", presign), func(t *testing.T) {
			p := startProcess(t, dataRefConfigStore(t, fmt.Sprintf(`  store: s3
  s3: {endpoint: %q, bucket: dataref, region: us-east-1, access_key: test, secret_key: test-secret, secure: false, presign: %v, prefix: p%v/}
`, addrs[0], presign, presign)))
			startAgent(t, p.internal, "s3-agent", true)
			capsWith(t, p, "agent.sha256")
			data := []byte("objects in an S3-compatible store")
			ref := uploadBlob(t, p, blobToken(t, "blobs:write"), data)
			for _, tt := range []struct {
				params string
				want   []byte
			}{
				{`{"data_refs":[{"uri":%q}]}`, data},
				{`{"data_refs":[{"uri":%q,"offset":8,"length":6}]}`, data[8:14]},
			} {
				r := p.rpcCall(t, "", "agent.sha256", fmt.Sprintf(tt.params, ref))
				if errorCode(r) != 0 || !strings.Contains(r.body, fmt.Sprintf(`"sha256":%q`, hexSum(tt.want))) {
					t.Fatalf("%s: %s; want the SHA-256 of %q", tt.params, r.body, tt.want)
				}
			}
			// The URL an agent got: the object store's when presigned, else the gateway's.
			seen := make(chan probeTask, 1)
			startProbeAgent(t, p, seen)
			r := p.rpcCall(t, "", "agent.copy", fmt.Sprintf(`{"upload":true,"data_refs":[{"uri":%q,"offset":8,"length":6}]}`, ref))
			got := <-seen
			u, err := url.Parse(got.refs[0].GetUri())
			if err != nil || (u.Host == addrs[0]) != presign {
				t.Fatalf("the agent's URL %q, presign %v", got.refs[0].GetUri(), presign)
			}
			var res struct {
				DataRefs []struct{ URI string } `json:"data_refs"`
			}
			if json.Unmarshal(r.reply.Result, &res) != nil || len(res.DataRefs) != 1 {
				t.Fatalf("agent.copy: %s", r.body)
			}
			out := p.blobBase() + strings.TrimPrefix(res.DataRefs[0].URI, "blob:")
			if status, _, body := httpDo(t, http.MethodGet, out, nil, "Authorization", "Bearer "+blobToken(t, "blobs:read")); status != http.StatusOK || body != string(data[8:14]) {
				t.Fatalf("the output in S3: %d %q", status, body)
			}
		})
	}
}

// probeTask is what the probe agent saw of one task.
type probeTask struct {
	refs   []*agentlinkv1.DataRef
	upload *agentlinkv1.DataRef
}

// startProbeAgent connects an agent (in this process, over the gateway's agent link) whose
// operator "copy" reads its first DataRef's URL and uploads those bytes as its output, and
// reports the URLs it was given on seen.
func startProbeAgent(t *testing.T, p *process, seen chan<- probeTask) {
	t.Helper()
	startProbeAgentToken(t, p, seen, "")
}

// startProbeAgentToken is startProbeAgent for an agent presenting token ("": none). The
// agent sends the headers its DataRefs carry (a trusted agent's task token).
func startProbeAgentToken(t *testing.T, p *process, seen chan<- probeTask, token string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	copyOp := demo.AgentOperator{ID: "copy", Description: "Uploads the bytes of its first DataRef as its output.",
		Input: `{"type":"object","properties":{"upload":{"type":"boolean"}}}`, Output: `{"type":"object"}`,
		Run: func(ctx context.Context, task demo.AgentTask) ([]byte, error) {
			seen <- probeTask{refs: task.Refs, upload: task.Upload}
			var in struct{ Upload bool }
			_ = json.Unmarshal(task.Input, &in)
			if !in.Upload {
				return []byte(`{}`), nil
			}
			if len(task.Refs) == 0 || task.Upload == nil {
				return nil, fmt.Errorf("want a data ref and an upload URL, got %d refs and %v", len(task.Refs), task.Upload)
			}
			b, err := get(ctx, task.Refs[0])
			if err != nil {
				return nil, err
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodPut, task.Upload.GetUri(), bytes.NewReader(b))
			if err != nil {
				return nil, err
			}
			for k, v := range task.Upload.GetHeaders() {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return nil, err
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				return nil, fmt.Errorf("upload: HTTP %d", resp.StatusCode)
			}
			task.AddOutputRef(&agentlinkv1.DataRef{Uri: task.Upload.GetName(), Name: "copy", SizeBytes: uint64(len(b))})
			return json.Marshal(map[string]any{"bytes": len(b)})
		}}
	go func() {
		done <- demo.RunAgent(ctx, demo.AgentOptions{Addr: p.internal, ID: "probe", Token: token, Operators: []demo.AgentOperator{copyOp}})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("probe agent: %v", err)
		}
	})
	capsWith(t, p, "agent.copy")
}

// get reads a DataRef's URL (its range, with its headers).
func get(ctx context.Context, ref *agentlinkv1.DataRef) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ref.GetUri(), nil)
	if err != nil {
		return nil, err
	}
	for k, v := range ref.GetHeaders() {
		req.Header.Set(k, v)
	}
	if r := ref.GetRange(); r.GetLength() > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", r.GetOffset(), r.GetOffset()+r.GetLength()-1))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent {
		return nil, fmt.Errorf("fetch: HTTP %d", resp.StatusCode)
	}
	return io.ReadAll(resp.Body)
}

// TestDataRefOutputAndRefusals: an agent's output uploaded to its URL comes back to the
// caller as a ref it reads with blobs:read; the URLs an agent got are refused once
// expired, outside their range, tampered with, used twice or for too many bytes.
func TestDataRefOutputAndRefusals(t *testing.T) {
	p := startProcess(t, dataRefConfig(t))
	seen := make(chan probeTask, 8)
	startProbeAgent(t, p, seen)
	data := []byte("0123456789abcdefghijklmnopqrstuvwxyz")
	ref := uploadBlob(t, p, blobToken(t, "blobs:write"), data)

	// The output round trip.
	r := p.rpcCall(t, "", "agent.copy", fmt.Sprintf(`{"upload":true,"data_refs":[{"uri":%q,"offset":10,"length":6}]}`, ref))
	var res struct {
		Agent    string
		DataRefs []struct{ URI, Name string } `json:"data_refs"`
	}
	if err := json.Unmarshal(r.reply.Result, &res); err != nil || len(res.DataRefs) != 1 || !strings.HasPrefix(res.DataRefs[0].URI, "blob:out/") {
		t.Fatalf("agent.copy: %s", r.body)
	}
	first := <-seen
	out := p.blobBase() + strings.TrimPrefix(res.DataRefs[0].URI, "blob:")
	reader := blobToken(t, "blobs:read")
	if status, _, body := httpDo(t, http.MethodGet, out, nil, "Authorization", "Bearer "+reader); status != http.StatusOK || body != "abcdef" {
		t.Fatalf("the caller reads the output: %d %q", status, body)
	}
	if status, _, body := httpDo(t, http.MethodGet, out, nil, "Authorization", "Bearer "+blobToken(t, "blobs:write")); status != http.StatusForbidden {
		t.Fatalf("a read without blobs:read: %d %s", status, body)
	}
	if status, _, body := httpDo(t, http.MethodPut, first.upload.GetUri(), []byte("again")); status != http.StatusConflict || !strings.Contains(body, `"reason":"exists"`) {
		t.Fatalf("a second PUT to the output URL: %d %s", status, body)
	}

	// A task whose URLs are probed.
	if r := p.rpcCall(t, "", "agent.copy", fmt.Sprintf(`{"data_refs":[{"uri":%q,"offset":4,"length":8}]}`, ref)); errorCode(r) != 0 {
		t.Fatalf("agent.copy: %s", r.body)
	}
	probe := <-seen
	fetch := probe.refs[0].GetUri()
	if status, _, body := httpDo(t, http.MethodGet, fetch, nil); status != http.StatusPartialContent || body != string(data[4:12]) {
		t.Fatalf("the agent's URL: %d %q", status, body)
	}
	if status, _, body := httpDo(t, http.MethodGet, fetch, nil, "Range", "bytes=5-7"); status != http.StatusPartialContent || body != string(data[5:8]) {
		t.Fatalf("a range within the grant: %d %q", status, body)
	}
	for _, rng := range []string{"bytes=0-3", "bytes=4-12", "bytes=11-", "bytes=-30"} {
		if status, _, body := httpDo(t, http.MethodGet, fetch, nil, "Range", rng); status != http.StatusRequestedRangeNotSatisfiable ||
			!strings.Contains(body, `"granted_offset":4`) {
			t.Errorf("%s, outside the grant [4, 12): %d %s", rng, status, body)
		}
	}
	u, err := url.Parse(fetch)
	if err != nil {
		t.Fatal(err)
	}
	tamper := func(param, value string) string {
		v := *u
		q := v.Query()
		q.Set(param, value)
		v.RawQuery = q.Encode()
		return v.String()
	}
	q := u.Query()
	sig := []byte(q.Get("sig"))
	sig[0] ^= 1
	otherKey := *u
	otherKey.Path = strings.TrimSuffix(u.Path, "/") + "x"
	for _, tt := range []struct{ name, url string }{
		{"key", otherKey.String()},
		{"task", tamper("task", q.Get("task")+"x")},
		{"agent", tamper("agent", "other")},
		{"expiry", tamper("exp", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))},
		{"offset", tamper("off", "0")},
		{"length", tamper("len", "36")},
		{"signature", tamper("sig", string(sig))},
	} {
		status, _, body := httpDo(t, http.MethodGet, tt.url, nil)
		if status != http.StatusUnauthorized || !strings.Contains(body, `"reason":"bad_signature"`) {
			t.Errorf("tampered %s: %d %s; want 401 bad_signature", tt.name, status, body)
		}
	}
	status, _, body := httpDo(t, http.MethodPut, probe.upload.GetUri(), bytes.Repeat([]byte("z"), 1025))
	if status != http.StatusRequestEntityTooLarge {
		t.Fatalf("an upload over the limit: %d %s", status, body)
	}
	// Past url_ttl (2s, rounded up to the second) both URLs are refused.
	time.Sleep(3200 * time.Millisecond)
	if status, _, body := httpDo(t, http.MethodGet, fetch, nil); status != http.StatusUnauthorized || !strings.Contains(body, `"reason":"expired"`) {
		t.Fatalf("an expired URL: %d %s", status, body)
	}
	if status, _, body := httpDo(t, http.MethodPut, probe.upload.GetUri(), []byte("late")); status != http.StatusUnauthorized || !strings.Contains(body, `"reason":"expired"`) {
		t.Fatalf("an expired upload URL: %d %s", status, body)
	}
}
