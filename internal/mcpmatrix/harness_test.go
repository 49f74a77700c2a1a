package mcpmatrix_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/mcpmatrix"
	"github.com/gatehouse-dev/gatehouse/internal/redistest"
	"github.com/gatehouse-dev/gatehouse/server"
	"github.com/gatehouse-dev/gatehouse/state"
)

// tools returns the installation of the pinned Node peers ($MCPMATRIX_TOOLS, else
// .tmp/mcpmatrix of the repository). When it is missing the test skips, unless
// CONFORMANCE_REQUIRED is set, as the conformance tests do.
func tools(t *testing.T) mcpmatrix.Tools {
	t.Helper()
	dir := os.Getenv("MCPMATRIX_TOOLS")
	if dir == "" {
		dir = filepath.Join("..", "..", mcpmatrix.DefaultToolsDir)
	}
	pins, err := mcpmatrix.ReadPins("package.json")
	if err != nil {
		t.Fatal(err)
	}
	tl := mcpmatrix.Tools{Dir: dir}
	if err := tl.Check(context.Background(), pins); errors.Is(err, mcpmatrix.ErrNotInstalled) && os.Getenv("CONFORMANCE_REQUIRED") == "" {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
	return tl
}

// nodeProcess is a Node script of the harness, its standard input held open (closing it
// ends the script) and its standard output read line by line.
type nodeProcess struct {
	stdin  io.WriteCloser
	lines  chan []byte
	stderr *syncBuffer
	done   chan error
}

// startNode runs script (under node/) and stops it when the test ends.
func startNode(t *testing.T, tl mcpmatrix.Tools, script string) *nodeProcess {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := tl.Command(ctx, filepath.Join("node", script))
	p := &nodeProcess{lines: make(chan []byte, 64), stderr: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		scanner := bufio.NewScanner(stdout)
		scanner.Buffer(make([]byte, 64<<10), 4<<20)
		for scanner.Scan() {
			p.lines <- bytes.Clone(scanner.Bytes())
		}
		close(p.lines)
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = p.stdin.Close()
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			cancel()
			<-p.done
		}
		cancel()
		if t.Failed() && p.stderr.String() != "" {
			t.Logf("%s stderr:\n%s", script, p.stderr.String())
		}
	})
	return p
}

// first waits for the script's first line.
func (p *nodeProcess) first(t *testing.T, within time.Duration) []byte {
	t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			t.Fatalf("node exited before answering: %s", p.stderr.String())
		}
		return line
	case <-time.After(within):
		t.Fatalf("node did not answer within %s: %s", within, p.stderr.String())
	}
	return nil
}

// tsClients runs cells in the Node client script, concurrently, each answer matched to
// its cell by id.
type tsClients struct {
	p       *nodeProcess
	mu      sync.Mutex
	nextID  int
	waiting map[int]chan tsAnswer
}

type tsAnswer struct {
	ID    int               `json:"id"`
	Error string            `json:"error"`
	Steps map[string]string `json:"steps"`
}

func newTSClients(t *testing.T, p *nodeProcess) *tsClients {
	c := &tsClients{p: p, waiting: map[int]chan tsAnswer{}}
	go func() {
		for line := range p.lines {
			var a tsAnswer
			if err := json.Unmarshal(line, &a); err != nil {
				t.Errorf("clients.cjs wrote %q: %v", line, err)
				continue
			}
			c.mu.Lock()
			ch := c.waiting[a.ID]
			delete(c.waiting, a.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- a
			}
		}
	}()
	return c
}

// run is a goClient running the cell in Node with the SDK sdk.
func (c *tsClients) run(sdk string) goClient {
	return func(ctx context.Context, _ *http.Client, url, version, kind, name string, steps []string) (map[string]error, error) {
		c.mu.Lock()
		c.nextID++
		id := c.nextID
		ch := make(chan tsAnswer, 1)
		c.waiting[id] = ch
		line, err := json.Marshal(map[string]any{"id": id, "sdk": sdk, "url": url, "version": version, "kind": kind, "name": name, "steps": steps})
		if err == nil {
			_, err = c.p.stdin.Write(append(line, '\n'))
		}
		c.mu.Unlock()
		if err != nil {
			return nil, err
		}
		select {
		case a := <-ch:
			if a.Error != "" {
				return nil, errors.New(a.Error)
			}
			out := make(map[string]error, len(a.Steps))
			for step, msg := range a.Steps {
				switch msg {
				case "":
					out[step] = nil
				case errNoTaskAPI.Error():
					out[step] = errNoTaskAPI
				default:
					out[step] = errors.New(msg)
				}
			}
			return out, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("clients.cjs: %w", ctx.Err())
		}
	}
}

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

// upstream is one matrix server as the gateway sees it.
type upstream struct {
	kind, url, version string
}

// sessionKey signs /mcp session IDs on both replicas, so that each accepts the other's.
const sessionKey = "mcpmatrix-0123456789abcdef0123456789abcdef"

// replicaConfig is a gateway bridging upstreams, MCP tasks on, sampling and elicitation relayed to the
// calling client.
func replicaConfig(upstreams []upstream) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, `server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth: {anonymous: {}}
mcp_face: {session_key: %q, tasks: {enabled: true}}
nekte: {}
log: {level: warn}
routing:
  mcp:
    servers:
`, sessionKey)
	for _, u := range upstreams {
		fmt.Fprintf(&b, `      - name: %s
        http: {url: %q}
        protocol_versions: [%s]
        sampling: client
        elicitation: client
`, u.kind, u.url, u.version)
	}
	return b.String()
}

// startReplicas starts n gateways on the same configuration and the same Redis, and
// returns their base URLs (http://host:port).
func startReplicas(t *testing.T, n int, yaml string) []string {
	t.Helper()
	redis := redistest.Start(t)
	prefix := redis.Prefix(t)
	bases := make([]string, n)
	for i := range bases {
		kv, err := state.NewRedis(state.RedisConfig{Addrs: []string{redis.Addr}, KeyPrefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := server.Parse("mcpmatrix.yaml", []byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		logs := &syncBuffer{}
		srv, err := server.New(cfg, server.Options{State: kv, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("replica %d stopped with %v", i, err)
			}
			_ = kv.Close()
			if t.Failed() {
				t.Logf("replica %d logs:\n%s", i, logs.String())
			}
		})
		bases[i] = "http://" + srv.BoundaryAddr().String()
		waitReady(t, "http://"+srv.AdminAddr().String()+"/readyz")
	}
	return bases
}

func waitReady(t *testing.T, readyz string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(readyz) //nolint:noctx // the replica's own loopback admin address
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s did not answer 200 within 30s", readyz)
}

// alternating is a reverse proxy in front of the replicas, as a load balancer without
// affinity would be: each request, streams included, goes to the next replica in turn.
// served counts the requests each replica got.
type alternating struct {
	*httptest.Server
	served []atomic.Int64
}

// newSticky is a reverse proxy sending every request to bases[0], as a balancer with
// session affinity would.
func newSticky(t *testing.T, bases []string) *alternating { return newAlternating(t, bases[:1]) }

func newAlternating(t *testing.T, bases []string) *alternating {
	t.Helper()
	targets := make([]*url.URL, len(bases))
	for i, b := range bases {
		u, err := url.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		targets[i] = u
	}
	a := &alternating{served: make([]atomic.Int64, len(bases))}
	var next atomic.Uint64
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			i := int(next.Add(1)-1) % len(targets)
			a.served[i].Add(1)
			r.SetURL(targets[i])
		},
		FlushInterval: -1,
		ErrorLog:      nil,
	}
	a.Server = httptest.NewServer(proxy)
	t.Cleanup(a.Close)
	return a
}

func jsonUnmarshal(raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%q: %w", raw, err)
	}
	return nil
}
