package demo_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/demo"
)

// testTimeout bounds every exchange with the fixture.
const testTimeout = 10 * time.Second

// peer is one way of reaching a fixture: a transport and a protocol revision.
type peer struct {
	name string
	// version is the protocol version the client must end up on.
	version string
	connect connector
}

// peers are every transport the fixture serves, on each protocol era it speaks there.
var peers = []peer{
	{"in-process/2025-11-25", mcp.ProtocolVersion20251125, inProcess(mcp.ProtocolVersion20251125)},
	{"in-process/2026-07-28", mcp.ProtocolVersion20260728, inProcess(mcp.ProtocolVersion20260728)},
	{"http/2025-06-18", mcp.ProtocolVersion20250618, streamableHTTP(mcp.ProtocolVersion20250618)},
	{"http/2025-11-25", mcp.ProtocolVersion20251125, streamableHTTP(mcp.ProtocolVersion20251125)},
	{"http/2026-07-28", mcp.ProtocolVersion20260728, streamableHTTP(mcp.ProtocolVersion20260728)},
	{"stdio/2025-11-25", mcp.ProtocolVersion20251125, stdio(mcp.ProtocolVersion20251125)},
	{"stdio/2026-07-28", mcp.ProtocolVersion20260728, stdio(mcp.ProtocolVersion20260728)},
}

// connector connects a client to a fixture over one transport.
type connector = func(t *testing.T, srv *demo.MCP, opts ...client.ClientOption) *client.Client

// fakeUser answers the fixture's sampling and elicitation requests the way the suite does,
// and records them.
type fakeUser struct {
	mu          sync.Mutex
	sampling    []mcp.CreateMessageRequest
	elicitation []mcp.ElicitationRequest
	answer      map[string]any
}

func (u *fakeUser) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.sampling = append(u.sampling, req)
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("This is a test response from the client")},
		Model:           "test-model",
		StopReason:      "endTurn",
	}, nil
}

func (u *fakeUser) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.elicitation = append(u.elicitation, req)
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: u.answer}}, nil
}

// start initializes c as a client that can sample and elicit, and closes it with the test.
func start(t *testing.T, c *client.Client, p peer) {
	t.Helper()
	// The transport keeps the context of Start for its lifetime: the HTTP transport's GET
	// stream ends with it, so it must outlive the client.
	life, end := context.WithCancel(context.Background())
	if err := c.Start(life); err != nil {
		end()
		t.Fatalf("%s: start: %v", p.name, err)
	}
	t.Cleanup(func() {
		_ = c.Close()
		end()
	})
	ctx := ctxT(t)
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "mcpdemo-test", Version: "1.0.0"}
	req.Params.Capabilities = mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}, Elicitation: &mcp.ElicitationCapability{}}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("%s: initialize: %v", p.name, err)
	}
	if got := c.ProtocolVersion(); got != p.version {
		t.Fatalf("%s: negotiated protocol %q, want %q", p.name, got, p.version)
	}
}

func inProcess(version string) connector {
	return func(t *testing.T, srv *demo.MCP, opts ...client.ClientOption) *client.Client {
		t.Helper()
		c, err := client.NewInProcessClientWithOptions(srv.MCPServer(), append(opts, client.WithProtocolVersion(version))...)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

// streamableHTTP serves srv on a loopback port and connects over streamable HTTP. On the
// revisions that have one, the client opens the GET stream, which sampling needs (see
// HTTPHandler); 2026-07-28 has none and samples by multi round-trip requests instead.
func streamableHTTP(version string) connector {
	return func(t *testing.T, srv *demo.MCP, opts ...client.ClientOption) *client.Client {
		t.Helper()
		url := serveHTTP(t, srv)
		// An own transport, whose idle connections are closed before the server stops: a
		// connection the client dialled but never used would hold up its Shutdown 5 s.
		hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		t.Cleanup(hc.CloseIdleConnections)
		topts := []transport.StreamableHTTPCOption{
			transport.WithHTTPBasicClient(hc),
			transport.WithHTTPLogger(slog.New(slog.DiscardHandler)),
		}
		if !mcp.IsModernProtocol(version) {
			topts = append(topts, transport.WithContinuousListening()) //nolint:staticcheck // the GET stream of revisions before 2026-07-28, which sampling needs
		}
		tr, err := transport.NewStreamableHTTP(url, topts...)
		if err != nil {
			t.Fatal(err)
		}
		return client.NewClient(tr, append(opts, client.WithProtocolVersion(version))...)
	}
}

// serveHTTP serves srv's streamable HTTP handler on 127.0.0.1 until the test ends.
func serveHTTP(t *testing.T, srv *demo.MCP) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{ReadHeaderTimeout: testTimeout}
	// Given the http.Server, Shutdown stops it too and keeps ending sessions until it
	// has, so that no GET stream (and its pump goroutine) opened meanwhile survives.
	handler := srv.StreamableHTTPHandler(server.WithStreamableHTTPServer(hs))
	hs.Handler = handler
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if err := handler.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String() + "/mcp"
}

// stdio serves srv with ServeStdio over pipes.
func stdio(version string) connector {
	return func(t *testing.T, srv *demo.MCP, opts ...client.ClientOption) *client.Client {
		t.Helper()
		return stdioClient(t, srv, append(opts, client.WithProtocolVersion(version))...)
	}
}

func stdioClient(t *testing.T, srv *demo.MCP, opts ...client.ClientOption) *client.Client {
	t.Helper()
	toServer, clientOut := io.Pipe()
	clientIn, fromServer := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- srv.ServeStdio(context.Background(), toServer, fromServer) }()
	t.Cleanup(func() {
		// Registered before the client's Close, so it runs after it: the client closes
		// its end of toServer, ServeStdio sees EOF and returns, and closing fromServer
		// then ends the client's reader.
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("ServeStdio: %v", err)
			}
		case <-time.After(testTimeout):
			t.Error("ServeStdio did not return after its input closed")
		}
		_ = fromServer.Close()
	})
	return client.NewClient(transport.NewIO(clientIn, clientOut, nil), opts...)
}

// connect returns a started client of srv over p, answering as user.
func connect(t *testing.T, srv *demo.MCP, p peer, user *fakeUser) *client.Client {
	t.Helper()
	c := p.connect(t, srv, client.WithSamplingHandler(user), client.WithElicitationHandler(user))
	start(t, c, p)
	return c
}

// notifications records the notifications a client receives.
type notifications struct {
	mu   sync.Mutex
	list []mcp.JSONRPCNotification
}

func (n *notifications) record(c *client.Client) {
	c.OnNotification(func(note mcp.JSONRPCNotification) {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.list = append(n.list, note)
	})
}

// params returns the params of the notifications with method, as JSON objects.
func (n *notifications) params(t *testing.T, method string) []map[string]any {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []map[string]any
	for _, note := range n.list {
		if note.Method != method {
			continue
		}
		out = append(out, asObject(t, note.Params))
	}
	return out
}

// waitFor polls until cond holds or the test timeout passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// asJSON is v encoded, for comparing wire shapes.
func asJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// sameJSON reports whether v encodes to the same JSON value as want, key order aside.
func sameJSON(t *testing.T, v any, want string) bool {
	t.Helper()
	var got, exp any
	if err := json.Unmarshal([]byte(asJSON(t, v)), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &exp); err != nil {
		t.Fatalf("want %s: %v", want, err)
	}
	return reflect.DeepEqual(got, exp)
}

// asObject is v as the JSON object it encodes to.
func asObject(t *testing.T, v any) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal([]byte(asJSON(t, v)), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// ctxT is a context bounded by testTimeout and ended with the test.
func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}
