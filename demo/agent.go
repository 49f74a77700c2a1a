package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	agentlinkv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/agentlink/v1"
)

// AgentOptions configure the reference agent (RunAgent).
type AgentOptions struct {
	// Addr is the gateway's internal gRPC listener, host:port.
	Addr string
	// Token, when set, is sent as a bearer token ("authorization" metadata).
	Token string
	// ID is the agent's id (default: the host name and process id).
	ID string
	// Versions are the protocol versions the agent offers (default ["1.0.0"]).
	Versions []string
	// MaxConcurrent is the number of tasks it runs at once (default 4); more are rejected.
	MaxConcurrent int
	// Reconnect dials again, after a second, when a connection ends for any reason but a
	// Reject (which ends RunAgent with its reason).
	Reconnect bool
	// Fault makes the agent misbehave, to exercise the gateway's defences (tests and
	// demonstrations): "" none; "silent" stops sending anything once it has accepted a
	// task; "duplicate" sends every result twice; "late" sends every result after the
	// task's timeout; "unknown-result" sends a result for a task it was never given;
	// "oversized" sends a frame larger than the gateway's limit; "flood" sends heartbeats
	// as fast as it can.
	Fault string
	// Logger receives what the agent does; nil discards it.
	Logger *slog.Logger
	// Operators are the operators it runs (default AgentOperators()).
	Operators []AgentOperator
}

// errRejected marks a connection the gateway refused (RunAgent does not reconnect).
var errRejected = errors.New("rejected by the gateway")

// RunAgent runs the reference agent until ctx ends: it connects to the gateway, advertises
// its operators, and runs the tasks dispatched to it. It returns nil when ctx ends, or the
// error that ended the last connection when it does not reconnect.
func RunAgent(ctx context.Context, opts AgentOptions) error {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ID == "" {
		host, _ := os.Hostname()
		opts.ID = fmt.Sprintf("%s-%d", strings.Map(idRune, host), os.Getpid())
	}
	if len(opts.Versions) == 0 {
		opts.Versions = []string{"1.0.0"}
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = 4
	}
	if opts.Operators == nil {
		opts.Operators = AgentOperators()
	}
	for {
		err := runAgentOnce(ctx, opts)
		select {
		case <-ctx.Done():
			return nil // stopped, not failed
		default:
		}
		if errors.Is(err, errRejected) || !opts.Reconnect {
			return err
		}
		opts.Logger.Warn("connection ended; reconnecting", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

func idRune(r rune) rune {
	if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
		return r
	}
	return '-'
}

// agentConn is one connection of the reference agent.
type agentConn struct {
	opts    AgentOptions
	ops     map[string]AgentOperator
	sendMu  sync.Mutex
	stream  grpc.BidiStreamingClient[agentlinkv1.ConnectRequest, agentlinkv1.ConnectResponse]
	welcome *agentlinkv1.Welcome
	slots   chan struct{}

	mu      sync.Mutex
	running map[string]context.CancelFunc
	silent  bool
}

func runAgentOnce(ctx context.Context, opts AgentOptions) error {
	cc, err := grpc.NewClient(opts.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer func() { _ = cc.Close() }()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if opts.Token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+opts.Token)
	}
	st, err := agentlinkv1.NewAgentLinkServiceClient(cc).Connect(ctx)
	if err != nil {
		return err
	}
	c := &agentConn{opts: opts, stream: st, ops: make(map[string]AgentOperator), slots: make(chan struct{}, opts.MaxConcurrent),
		running: make(map[string]context.CancelFunc)}
	for _, op := range opts.Operators {
		c.ops[op.ID] = op
	}
	if err := c.handshake(); err != nil {
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { c.heartbeats(ctx) })
	return c.serve(ctx, &wg)
}

// handshake sends the descriptor and reads the Welcome.
func (c *agentConn) handshake() error {
	d := &agentlinkv1.NodeDescriptor{AgentId: c.opts.ID, ProtocolVersions: c.opts.Versions, Arch: goArch(), Os: goOS(),
		CpuCores: uint32(numCPU()), MaxConcurrentTasks: uint32(c.opts.MaxConcurrent)} //nolint:gosec // small positive numbers
	for _, op := range c.opts.Operators {
		d.Operators = append(d.Operators, &agentlinkv1.Operator{Id: op.ID, Description: op.Description,
			InputSchemaJson: op.Input, OutputSchemaJson: op.Output, Cost: &agentlinkv1.CostHint{TypicalMs: op.TypicalMs}})
	}
	if err := c.send(&agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_NodeDescriptor{NodeDescriptor: d}}); err != nil {
		return err
	}
	m, err := c.stream.Recv()
	if err != nil {
		return fmt.Errorf("%w: %s", errRejected, status.Convert(err).Message())
	}
	if r := m.GetReject(); r != nil {
		return fmt.Errorf("%w: %s", errRejected, r.GetReason())
	}
	if c.welcome = m.GetWelcome(); c.welcome == nil {
		return errors.New("the gateway's first message is not a welcome")
	}
	c.opts.Logger.Info("connected", "agent", c.opts.ID, "version", c.welcome.GetProtocolVersion(), "session", c.welcome.GetSessionId(),
		"heartbeat_interval_ms", c.welcome.GetHeartbeatIntervalMs())
	return c.misbehaveAtStart()
}

// misbehaveAtStart acts out the faults that need no task.
func (c *agentConn) misbehaveAtStart() error {
	switch c.opts.Fault {
	case "unknown-result":
		return c.send(result("never-dispatched/1", agentlinkv1.TaskStatus_TASK_STATUS_SUCCEEDED, []byte(`{}`), ""))
	case "oversized":
		big := make([]byte, c.welcome.GetMaxFrameBytes()+1)
		for i := range big {
			big[i] = 'a'
		}
		return c.send(result("oversized/1", agentlinkv1.TaskStatus_TASK_STATUS_SUCCEEDED, append(append([]byte{'"'}, big...), '"'), ""))
	case "flood":
		// Until the gateway disconnects it, which is what the fault is for: the reason
		// then arrives on the stream (serve).
		for i := 0; i < 100000 && c.send(heartbeat(1)) == nil; i++ {
		}
	}
	return nil
}

// heartbeats sends a heartbeat every interval until ctx ends (or the agent fell silent).
func (c *agentConn) heartbeats(ctx context.Context) {
	iv := time.Duration(c.welcome.GetHeartbeatIntervalMs()) * time.Millisecond
	if iv <= 0 {
		iv = 5 * time.Second
	}
	t := time.NewTicker(iv)
	defer t.Stop()
	var seq uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			seq++
			if c.isSilent() {
				continue
			}
			_ = c.send(heartbeat(seq))
		}
	}
}

// serve reads the gateway's messages until the stream ends.
func (c *agentConn) serve(ctx context.Context, wg *sync.WaitGroup) error {
	for {
		m, err := c.stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return errors.New("the gateway closed the stream")
			}
			return fmt.Errorf("stream: %s", status.Convert(err).Message())
		}
		switch {
		case m.GetDispatch() != nil:
			d := m.GetDispatch()
			c.start(ctx, wg, d)
		case m.GetCancel() != nil:
			c.mu.Lock()
			if cancel := c.running[m.GetCancel().GetTaskId()]; cancel != nil {
				cancel()
			}
			c.mu.Unlock()
		case m.GetDisconnect() != nil:
			return fmt.Errorf("disconnected by the gateway: %s", m.GetDisconnect().GetReason())
		}
	}
}

// start acknowledges a dispatch and runs the task, or rejects it.
func (c *agentConn) start(ctx context.Context, wg *sync.WaitGroup, d *agentlinkv1.TaskDispatch) {
	op, ok := c.ops[d.GetOperator()]
	if !ok {
		_ = c.send(ack(d.GetTaskId(), false, "this agent does not run operator "+d.GetOperator()))
		return
	}
	select {
	case c.slots <- struct{}{}:
	default:
		_ = c.send(ack(d.GetTaskId(), false, "busy: every task slot of this agent is taken"))
		return
	}
	if c.isSilent() {
		return
	}
	if err := c.send(ack(d.GetTaskId(), true, "")); err != nil {
		<-c.slots
		return
	}
	if c.opts.Fault == "silent" {
		c.mu.Lock()
		c.silent = true
		c.mu.Unlock()
		<-c.slots
		return
	}
	tctx, cancel := context.WithTimeout(ctx, time.Duration(d.GetTimeoutMs())*time.Millisecond)
	c.mu.Lock()
	c.running[d.GetTaskId()] = cancel
	c.mu.Unlock()
	wg.Go(func() {
		defer func() { <-c.slots }()
		defer cancel()
		c.run(tctx, op, d)
		c.mu.Lock()
		delete(c.running, d.GetTaskId())
		c.mu.Unlock()
	})
}

// run runs one task and sends its result (twice, or after its timeout, under a fault).
func (c *agentConn) run(ctx context.Context, op AgentOperator, d *agentlinkv1.TaskDispatch) {
	progress := func(done, total float64, msg string) {
		_ = c.send(&agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_Progress{Progress: &agentlinkv1.TaskProgress{
			TaskId: d.GetTaskId(), Progress: done, Total: total, Message: msg}}})
	}
	var outRefs []*agentlinkv1.DataRef
	out, err := op.Run(ctx, AgentTask{Input: d.GetInputJson(), Refs: d.GetInputRefs(), Progress: progress, Upload: d.GetOutputUpload(),
		AddOutputRef: func(r *agentlinkv1.DataRef) { outRefs = append(outRefs, r) }})
	res := result(d.GetTaskId(), agentlinkv1.TaskStatus_TASK_STATUS_SUCCEEDED, out, "")
	res.GetResult().OutputRefs = outRefs
	if err != nil {
		res = result(d.GetTaskId(), agentlinkv1.TaskStatus_TASK_STATUS_FAILED, nil, err.Error())
	}
	if c.opts.Fault == "late" {
		<-ctx.Done() // the task's timeout
		time.Sleep(100 * time.Millisecond)
	}
	_ = c.send(res)
	if c.opts.Fault == "duplicate" {
		_ = c.send(res)
	}
}

func (c *agentConn) isSilent() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.silent
}

// send sends one message; gRPC streams take one sender at a time.
func (c *agentConn) send(m *agentlinkv1.ConnectRequest) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	return c.stream.Send(m)
}

func heartbeat(seq uint64) *agentlinkv1.ConnectRequest {
	return &agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_Heartbeat{Heartbeat: &agentlinkv1.Heartbeat{Sequence: seq}}}
}

func ack(id string, ok bool, reason string) *agentlinkv1.ConnectRequest {
	return &agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_Ack{Ack: &agentlinkv1.TaskAck{TaskId: id, Accepted: ok, Reason: reason}}}
}

func result(id string, s agentlinkv1.TaskStatus, out []byte, diag string) *agentlinkv1.ConnectRequest {
	return &agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_Result{Result: &agentlinkv1.TaskResult{TaskId: id, Status: s, OutputJson: out, Diagnostics: diag}}}
}
