package agentlink_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/gatehouse/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/agentlink"
	"github.com/gatehouse-dev/gatehouse/schemas"
	agentlinkv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/agentlink/v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testTokens maps the bearer tokens tests present to the scopes their principal holds.
var testTokens = map[string][]string{
	"all":      {agentlink.ScopeServe},
	"echo":     {agentlink.ScopeServePrefix + "echo"},
	"readonly": {"calls:read"},
	"trusted":  {agentlink.ScopeServe, agentlink.DefaultTrustedScope},
}

// testAuthn authenticates as the gateway's internal face does: the bearer token from the
// metadata, the remote address from the peer.
func testAuthn(ctx context.Context) (gateway.Principal, gateway.Credentials, error) {
	var creds gateway.Credentials
	if p, ok := peer.FromContext(ctx); ok {
		creds.Remote, _ = netip.ParseAddrPort(p.Addr.String())
	}
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("authorization"); len(v) > 0 {
		creds.Bearer = strings.TrimPrefix(v[0], "Bearer ")
	}
	if creds.Bearer == "" {
		return gateway.Principal{}, creds, gateway.NewError(schemas.CodeAuthentication)
	}
	scopes, ok := testTokens[creds.Bearer]
	if !ok {
		return gateway.Principal{}, creds, gateway.NewError(schemas.CodeAuthentication)
	}
	return gateway.Principal{Subject: "agent-" + creds.Bearer, Scopes: scopes}, creds, nil
}

// fastConfig is a configuration with short heartbeats for tests.
func fastConfig() agentlink.Config {
	return agentlink.Config{HeartbeatInterval: 100 * time.Millisecond, MissedHeartbeats: 3, DispatchTimeout: 5 * time.Second,
		Auth: agentlink.AuthConfig{AllowLoopbackAnonymous: true}}
}

// steadyConfig is fastConfig for tests that need their agents and replicas to stay: an
// agent (and a replica's registry entries) lapses only after 2s without a message, well
// above the scheduling delays of a loaded 2-core machine running tests in parallel under
// -race, where fastConfig's 300ms can pass between two messages of a live agent.
func steadyConfig() agentlink.Config {
	cfg := fastConfig()
	cfg.HeartbeatInterval, cfg.MissedHeartbeats = 250*time.Millisecond, 8
	return cfg
}

// startHub serves a hub for cfg on a loopback listener and returns it with the address.
func startHub(t *testing.T, cfg agentlink.Config) (*agentlink.Hub, string) { return startHubB(t, cfg) }

// startHubB is startHub for tests and benchmarks.
func startHubB(t testing.TB, cfg agentlink.Config) (*agentlink.Hub, string) {
	return startHubOpts(t, cfg, agentlink.Options{})
}

// startHubOpts is startHub with options.
func startHubOpts(t testing.TB, cfg agentlink.Config, opts agentlink.Options) (*agentlink.Hub, string) {
	t.Helper()
	h, err := agentlink.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	h.RegisterGRPC(gs, testAuthn)
	done := make(chan struct{})
	go func() { defer close(done); _ = gs.Serve(ln) }()
	t.Cleanup(func() {
		_ = h.Close()
		gs.Stop()
		<-done
	})
	return h, ln.Addr().String()
}

// testAgent is a hand-driven agent: the test sends and receives each message itself.
type testAgent struct {
	t      testing.TB
	cc     *grpc.ClientConn
	stream grpc.BidiStreamingClient[agentlinkv1.ConnectRequest, agentlinkv1.ConnectResponse]
	cancel context.CancelFunc
	in     chan *agentlinkv1.ConnectResponse
	err    chan error
}

// echoOperator is an operator whose input is {"text": string}.
func echoOperator() *agentlinkv1.Operator {
	return &agentlinkv1.Operator{Id: "echo", Description: "Echoes its text.",
		InputSchemaJson:  `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`,
		OutputSchemaJson: `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`}
}

func descriptor(id string, ops ...*agentlinkv1.Operator) *agentlinkv1.NodeDescriptor {
	if len(ops) == 0 {
		ops = []*agentlinkv1.Operator{echoOperator()}
	}
	return &agentlinkv1.NodeDescriptor{AgentId: id, ProtocolVersions: []string{"1.0.0"}, Arch: "amd64", Os: "linux", CpuCores: 2, Operators: ops}
}

// connect opens a stream with token (none when empty) and sends d.
func connect(t testing.TB, addr, token string, d *agentlinkv1.NodeDescriptor) *testAgent {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	st, err := agentlinkv1.NewAgentLinkServiceClient(cc).Connect(ctx)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	a := &testAgent{t: t, cc: cc, stream: st, cancel: cancel, in: make(chan *agentlinkv1.ConnectResponse, 64), err: make(chan error, 1)}
	go func() {
		for {
			m, err := st.Recv()
			if err != nil {
				a.err <- err
				close(a.in)
				return
			}
			a.in <- m
		}
	}()
	t.Cleanup(a.close)
	if d != nil {
		a.send(&agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_NodeDescriptor{NodeDescriptor: d}})
	}
	return a
}

func (a *testAgent) close() {
	a.cancel()
	for range a.in {
	}
	_ = a.cc.Close()
}

func (a *testAgent) send(m *agentlinkv1.ConnectRequest) {
	a.t.Helper()
	if err := a.stream.Send(m); err != nil && !errors.Is(err, context.Canceled) {
		a.t.Logf("send: %v", err)
	}
}

// next returns the next message other than a heartbeat, or nil when the stream ended.
func (a *testAgent) next() *agentlinkv1.ConnectResponse {
	a.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-a.in:
			if !ok {
				return nil
			}
			if m.GetHeartbeat() != nil {
				continue
			}
			return m
		case <-timeout:
			a.t.Fatal("no message from the gateway within 10s")
			return nil
		}
	}
}

// welcome waits for the Welcome.
func (a *testAgent) welcome() *agentlinkv1.Welcome {
	a.t.Helper()
	m := a.next()
	if m.GetWelcome() == nil {
		a.t.Fatalf("want a welcome, got %v", m)
	}
	return m.GetWelcome()
}

// endErr returns the error the stream ended with.
func (a *testAgent) endErr() error {
	a.t.Helper()
	for range a.in {
	}
	return <-a.err
}

func (a *testAgent) beat() {
	a.send(&agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_Heartbeat{Heartbeat: &agentlinkv1.Heartbeat{Sequence: 1}}})
}

func (a *testAgent) ack(id string, ok bool, reason string) {
	a.send(&agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_Ack{Ack: &agentlinkv1.TaskAck{TaskId: id, Accepted: ok, Reason: reason}}})
}

func (a *testAgent) result(id string, status agentlinkv1.TaskStatus, out, diag string) {
	a.send(&agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_Result{Result: &agentlinkv1.TaskResult{TaskId: id, Status: status, OutputJson: []byte(out), Diagnostics: diag}}})
}

// dispatched waits for a TaskDispatch.
func (a *testAgent) dispatched() *agentlinkv1.TaskDispatch {
	a.t.Helper()
	m := a.next()
	if m.GetDispatch() == nil {
		a.t.Fatalf("want a dispatch, got %v", m)
	}
	return m.GetDispatch()
}

// serveEcho answers every dispatch by echoing its input, with heartbeats, until the stream ends.
func (a *testAgent) serveEcho() {
	go func() {
		for m := range a.in {
			if d := m.GetDispatch(); d != nil {
				a.ack(d.GetTaskId(), true, "")
				a.result(d.GetTaskId(), agentlinkv1.TaskStatus_TASK_STATUS_SUCCEEDED, string(d.GetInputJson()), "")
			}
			if m.GetHeartbeat() != nil {
				a.beat()
			}
		}
	}()
}

// dispatchAsync runs Dispatch in a goroutine.
func dispatchAsync(h *agentlink.Hub, task agentlink.Task) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		o, err := h.Dispatch(context.Background(), task)
		ch <- outcome{o, err}
	}()
	return ch
}

type outcome struct {
	o   *agentlink.Outcome
	err error
}

// wantCode checks err is a *gateway.Error with code and returns its data.
func wantCode(t *testing.T, err error, code schemas.Code) map[string]any {
	t.Helper()
	ge := gateway.AsError(err)
	if err == nil || ge.Code() != code {
		t.Fatalf("error = %v, want code %d", err, code)
	}
	return ge.Data()
}

// waitOperators waits until the hub offers n operators' agents in total.
func waitAgents(t *testing.T, h *agentlink.Hub, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(h.Agents()) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d agents connected, want %d", len(h.Agents()), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func echoInput(s string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"text": s})
	return b
}

// gateway0 is err's gateway code, 0 for nil.
func gateway0(err error) schemas.Code {
	if err == nil {
		return 0
	}
	return gateway.AsError(err).Code()
}

func forwardRequest(secret []byte) *gatehousev1.DispatchTaskRequest {
	return &gatehousev1.DispatchTaskRequest{Secret: secret, Operator: "echo", InputJson: []byte(`{"text":"hi"}`)}
}

func isPermissionDenied(err error) bool { return status.Code(err) == codes.PermissionDenied }
