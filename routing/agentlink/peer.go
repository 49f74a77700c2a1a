package agentlink

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"

	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
	gatehousev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/gatehouse/v1"
)

// Replicas and agents.
//
// An agent connects to one replica; a call may arrive at any. When replicas share a state
// store (Peers), each replica whose agents offer an operator keeps an entry for it under
// the key prefixOperator + operator: a JSON object mapping its advertised address to a
// random forwarding secret (made at start, never sent to agents) and the entry's expiry.
// A replica refreshes its entries at every heartbeat interval, each expiring after
// missed_heartbeats intervals, and drops them when its last agent offering the operator
// leaves or it shuts down. A replica whose own agents do not offer an operator reads the
// entry, picks one live replica (round robin) and forwards the task over gatehouse.v1.
// AgentPeerService on the internal listener with that replica's secret, under the call's
// deadline (the task's timeout, as a local dispatch) and trace context. The serving
// replica dispatches the task to one of its agents (DispatchTaskStream: k distinct ones for
// a redundant task's share, redundant.go), streams the agents' progress reports back and
// answers with the outcome or the task's failure, whose code and data reach the caller
// unchanged. A replica that dies
// takes its agents with it: a task forwarded to it fails with AGENT_GONE when the
// connection breaks, and its entries lapse within missed_heartbeats intervals, after which
// calls fail with NO_AGENT. Forwarded tasks are never retried. What the agents of each
// replica offer is in the shared catalog (catalog.go), so every replica lists them.

// prefixOperator is the shared store key prefix of the registry: + operator id.
const prefixOperator = "agentlink:op:"

// SharedStore is the part of the shared state store (state.KV) the registry uses.
type SharedStore interface {
	// Get returns the value under key and whether the key holds a live entry.
	Get(ctx context.Context, key string) ([]byte, bool, error)
	// CompareAndSwap stores newValue under key with a fresh ttl only if the current value
	// equals oldValue (nil: absent; a nil newValue deletes).
	CompareAndSwap(ctx context.Context, key string, oldValue, newValue []byte, ttl time.Duration) (bool, error)
}

// PeerClient calls other replicas' AgentPeerService. Implementations are safe for
// concurrent use.
type PeerClient interface {
	// DispatchTask forwards a task to the replica at addr (host:port).
	DispatchTask(ctx context.Context, addr string, req *gatehousev1.DispatchTaskRequest) (*gatehousev1.DispatchTaskResponse, error)
	// DispatchTaskStream forwards a task, possibly redundant, to the replica at addr and
	// calls progress (when set) with each progress report before it returns the answer.
	DispatchTaskStream(ctx context.Context, addr string, req *gatehousev1.DispatchTaskStreamRequest,
		progress func(*gatehousev1.ForwardedProgress)) (*gatehousev1.DispatchTaskResponse, error)
}

// Peers is how a Hub reaches the agents of other replicas sharing its state store, and
// lets them reach its own (UsePeers).
type Peers struct {
	// Advertise is the host:port other replicas reach this one's internal listener at.
	// Empty: this replica's agents serve only its own calls (it writes no entries), though
	// it still forwards to other replicas.
	Advertise string
	// Store is the shared state store.
	Store SharedStore
	// Client calls the other replicas. If it is an io.Closer, the hub's Close closes it.
	Client PeerClient
}

// replicaEntry is one replica in an operator's registry entry.
type replicaEntry struct {
	Secret  []byte `json:"secret"`
	Expires int64  `json:"exp"` // unix milliseconds
}

// peering is a hub's state towards other replicas.
type peering struct {
	Peers
	secret []byte
	stop   chan struct{}
	done   chan struct{}
	poke   chan struct{} // the operators offered changed: refresh now

	mu         sync.Mutex
	registered map[string]bool // operators this replica has an entry for; guarded by mu
	truncated  bool            // the shared catalog left operators out; guarded by mu
}

// UsePeers lets the hub forward tasks to other replicas' agents and serve theirs, until
// Close. It may be called once, before agents connect.
func (h *Hub) UsePeers(p Peers) error {
	if p.Store == nil || p.Client == nil {
		return errors.New("agentlink: Peers needs a Store and a Client")
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	pr := &peering{Peers: p, secret: secret, stop: make(chan struct{}), done: make(chan struct{}),
		poke: make(chan struct{}, 1), registered: map[string]bool{}}
	h.mu.Lock()
	if h.peers != nil || h.closed {
		h.mu.Unlock()
		return errors.New("agentlink: peers are set already, or the hub is closed")
	}
	h.peers = pr
	h.mu.Unlock()
	go h.advertiseLoop(pr)
	return nil
}

// pokeLocked asks the registry loop to refresh now (the operators offered changed). Under
// h.mu.
func (h *Hub) pokeLocked() {
	if pr := h.peers; pr != nil {
		select {
		case pr.poke <- struct{}{}:
		default:
		}
	}
}

func (h *Hub) peering() *peering {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.peers
}

// entryTTL is how long a registry entry lives unrefreshed: missed_heartbeats intervals.
func (h *Hub) entryTTL() time.Duration {
	return time.Duration(h.cfg.MissedHeartbeats) * h.cfg.HeartbeatInterval
}

// advertiseLoop keeps this replica's registry entries fresh until the hub closes, then
// drops them.
func (h *Hub) advertiseLoop(pr *peering) {
	defer close(pr.done)
	tick := time.NewTicker(h.cfg.HeartbeatInterval)
	defer tick.Stop()
	for {
		h.refreshEntries(pr, false)
		if h.refreshRemote(pr) {
			h.changed()
		}
		select {
		case <-pr.stop:
			h.refreshEntries(pr, true)
			return
		case <-tick.C:
		case <-pr.poke:
		}
	}
}

// refreshRemote reads the other replicas' shared catalogs; it reports whether the
// operators they offer changed.
func (h *Hub) refreshRemote(pr *peering) bool {
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.HeartbeatInterval)
	defer cancel()
	return h.readRemote(ctx, pr)
}

// refreshEntries writes this replica's entry for every operator its agents offer and drops
// the entries of those they no longer offer (all of them when closing), and publishes its
// shared catalog (catalog.go).
func (h *Hub) refreshEntries(pr *peering, closing bool) {
	if pr.Advertise == "" {
		return
	}
	offered := map[string]bool{}
	if !closing {
		h.mu.RLock()
		for op := range h.ops {
			offered[op] = true
		}
		h.mu.RUnlock()
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.HeartbeatInterval)
	defer cancel()
	for op := range offered {
		if err := h.updateEntry(ctx, pr, op, true); err != nil {
			h.log.Warn("the agents registry in the shared store could not be updated", "operator", op, "err", err)
			continue
		}
		pr.registered[op] = true
	}
	for op := range pr.registered {
		if offered[op] {
			continue
		}
		if err := h.updateEntry(ctx, pr, op, false); err != nil {
			h.log.Warn("the agents registry in the shared store could not be updated", "operator", op, "err", err)
			continue
		}
		delete(pr.registered, op)
	}
	if err := h.publishCatalog(ctx, pr, closing); err != nil {
		h.log.Warn("the shared catalog could not be updated", "err", err)
	}
}

// maxCASRounds bounds the compare-and-swap rounds of one entry update.
const maxCASRounds = 8

// updateEntry adds (or refreshes) this replica in op's entry, or removes it, pruning the
// replicas whose time has passed.
func (h *Hub) updateEntry(ctx context.Context, pr *peering, op string, present bool) error {
	key := prefixOperator + op
	now := h.now()
	for range maxCASRounds {
		old, ok, err := pr.Store.Get(ctx, key)
		if err != nil {
			return err
		}
		if !ok {
			old = nil
		}
		entries := parseEntries(old)
		for addr, e := range entries {
			if e.Expires <= now.UnixMilli() {
				delete(entries, addr)
			}
		}
		if present {
			entries[pr.Advertise] = replicaEntry{Secret: pr.secret, Expires: now.Add(h.entryTTL()).UnixMilli()}
		} else {
			delete(entries, pr.Advertise)
		}
		var next []byte
		if len(entries) > 0 {
			//nolint:gosec // the forwarding secret belongs in the shared store, as a NEKTE locator's fetch secret does
			if next, err = json.Marshal(entries); err != nil {
				return err
			}
		}
		if old == nil && next == nil {
			return nil
		}
		ttl := h.entryTTL()
		for _, e := range entries { // the key lives as long as its longest-lived replica
			ttl = max(ttl, time.UnixMilli(e.Expires).Sub(now))
		}
		swapped, err := pr.Store.CompareAndSwap(ctx, key, old, next, ttl)
		if err != nil {
			return err
		}
		if swapped {
			return nil
		}
	}
	return fmt.Errorf("operator %q: the entry kept changing (%d rounds)", op, maxCASRounds)
}

// parseEntries decodes an operator's entry; a missing or malformed one is empty.
func parseEntries(raw []byte) map[string]replicaEntry {
	m := map[string]replicaEntry{}
	if len(raw) > 0 && json.Unmarshal(raw, &m) != nil {
		return map[string]replicaEntry{}
	}
	return m
}

// remoteReplicas returns the live replicas other than this one whose agents offer op,
// sorted by address.
func (h *Hub) remoteReplicas(ctx context.Context, pr *peering, op string) ([]string, map[string]replicaEntry, error) {
	raw, ok, err := pr.Store.Get(ctx, prefixOperator+op)
	if err != nil || !ok {
		return nil, nil, err
	}
	entries := parseEntries(raw)
	now := h.now().UnixMilli()
	var addrs []string
	for addr, e := range entries {
		if addr != pr.Advertise && e.Expires > now {
			addrs = append(addrs, addr)
		}
	}
	slices.Sort(addrs)
	return addrs, entries, nil
}

// forward runs t on an agent of another replica; errNoAgent when none offers its operator.
func (h *Hub) forward(ctx context.Context, pr *peering, t Task, in json.RawMessage) (*Outcome, error) {
	addrs, entries, err := h.remoteReplicas(ctx, pr, t.Operator)
	if err != nil {
		h.log.Warn("the agents registry in the shared store could not be read", "operator", t.Operator, "err", err)
		return nil, errNoAgent(t.Operator).With("reason", "the agents of other replicas are out of reach: the shared store is unavailable")
	}
	if len(addrs) == 0 {
		return nil, errNoAgent(t.Operator)
	}
	addr := addrs[int(h.rotate.Add(1))%len(addrs)]
	if t.JobID == "" {
		t.JobID = newJobID()
	}
	res, err := h.forwardTo(ctx, pr, addr, entries[addr].Secret, t, in, 1)
	if err != nil {
		return nil, err
	}
	if f := res.GetFailure(); f != nil {
		return nil, failureError(f)
	}
	var o Outcome
	if err := json.Unmarshal(res.GetOutcomeJson(), &o); err != nil {
		return nil, gateway.NewError(schemas.CodeInternal).With("operator", t.Operator).Wrap(err)
	}
	return &o, nil
}

// forwardTo sends t (its job id set) to the replica at addr for k runs (1: one) over
// DispatchTaskStream, passing the agents' progress reports to t.Progress, and returns the
// replica's answer; an error is the hop's own failure (forwardError). A replica that does
// not serve DispatchTaskStream is sent a single task over DispatchTask, without progress.
func (h *Hub) forwardTo(ctx context.Context, pr *peering, addr string, secret []byte, t Task, in json.RawMessage, k int) (*gatehousev1.DispatchTaskResponse, error) {
	req := &gatehousev1.DispatchTaskRequest{Secret: secret, Operator: t.Operator, InputJson: in,
		JobId: t.JobID, AffinityKey: t.AffinityKey, TimeoutMs: u32(t.Timeout.Milliseconds()),
		CpuMillicores: t.CPUMillicores, MemoryBytes: t.MemoryBytes}
	if len(t.Refs) > 0 {
		var err error
		if req.DataRefsJson, err = json.Marshal(t.Refs); err != nil {
			return nil, gateway.NewError(schemas.CodeInternal).Wrap(err)
		}
	}
	timeout := h.timeout(ctx, t.Timeout)
	// The serving replica bounds the task by the same timeout; the grace covers the hop.
	fctx, cancel := context.WithTimeout(ctx, timeout+h.cfg.HeartbeatInterval)
	defer cancel()
	fctx, span := dispatchTracer.Start(fctx, "agentlink.forward", attribute.String("gatehouse.agent.operator", t.Operator),
		attribute.String("gatehouse.agent.replica", addr), attribute.Int("gatehouse.agent.redundancy", k))
	var progress func(*gatehousev1.ForwardedProgress)
	if t.Progress != nil {
		progress = func(p *gatehousev1.ForwardedProgress) {
			gp := gateway.Progress{Progress: p.GetProgress(), Message: p.GetMessage()}
			if p.GetHasTotal() {
				tot := p.GetTotal()
				gp.Total = &tot
			}
			t.Progress(gp)
		}
	}
	res, err := pr.Client.DispatchTaskStream(fctx, addr, &gatehousev1.DispatchTaskStreamRequest{Task: req, Redundancy: u32(int64(k))}, progress)
	if status.Code(err) == codes.Unimplemented && k == 1 { // a replica of an earlier version
		res, err = pr.Client.DispatchTask(fctx, addr, req)
	}
	if span != nil {
		if err != nil {
			span.SetStatus(otelcodes.Error, status.Convert(err).Message())
		}
		span.End()
	}
	if err != nil {
		return nil, h.forwardError(ctx, fctx, t, addr, timeout, err)
	}
	return res, nil
}

// forwardError maps a failed forward: the caller giving up is the caller's error, the hop
// outliving the task's timeout is AGENT_TASK_TIMEOUT, a refused secret (the replica
// restarted) is NO_AGENT, and anything else — the replica unreachable, or gone mid-task —
// is AGENT_GONE: the task may or may not have run.
func (h *Hub) forwardError(ctx, fctx context.Context, t Task, addr string, timeout time.Duration, err error) error {
	tk := &task{op: t.Operator, job: t.JobID}
	switch {
	case ctx.Err() != nil:
		return ctxError(ctx)
	case fctx.Err() != nil || status.Code(err) == codes.DeadlineExceeded:
		return errTimeout(tk, timeout.Milliseconds()).With("replica", addr)
	case status.Code(err) == codes.PermissionDenied:
		return errNoAgent(t.Operator).With("reason", "the replica that advertised the operator has restarted")
	}
	h.log.Warn("a task forwarded to another replica failed", "operator", t.Operator, "replica", addr, "err", err)
	return errGone(tk, "the replica the agent is connected to went away").With("replica", addr)
}

// failureError is the gateway error a serving replica answered with, code and data as it
// made them.
func failureError(f *gatehousev1.TaskFailure) error {
	e := gateway.NewError(schemas.Code(f.GetCode()))
	var data map[string]any
	if len(f.GetDataJson()) > 0 && json.Unmarshal(f.GetDataJson(), &data) == nil {
		for _, k := range slices.Sorted(maps.Keys(data)) {
			e = e.With(k, data[k])
		}
	}
	return e
}

// peerService is gatehouse.v1.AgentPeerService over the hub.
type peerService struct {
	gatehousev1.UnimplementedAgentPeerServiceServer
	hub *Hub
}

// DispatchTask implements gatehouse.v1.AgentPeerService: a task another replica forwards
// runs on one of this replica's agents, never forwarded again.
func (s *peerService) DispatchTask(ctx context.Context, req *gatehousev1.DispatchTaskRequest) (*gatehousev1.DispatchTaskResponse, error) {
	t, refused, err := s.task(req)
	if err != nil || refused != nil {
		return refused, err
	}
	return outcomeResponse(s.hub.dispatchLocal(ctx, t))
}

// task is the forwarded task of req: a status error when the secret is not this
// replica's, an answer (the failure) when the task is malformed.
func (s *peerService) task(req *gatehousev1.DispatchTaskRequest) (Task, *gatehousev1.DispatchTaskResponse, error) {
	pr := s.hub.peering()
	if pr == nil || subtle.ConstantTimeCompare(req.GetSecret(), pr.secret) != 1 {
		return Task{}, nil, status.Error(codes.PermissionDenied, "not this replica's forwarding secret")
	}
	t := Task{Operator: req.GetOperator(), Input: req.GetInputJson(), JobID: req.GetJobId(), AffinityKey: req.GetAffinityKey(),
		Timeout: time.Duration(req.GetTimeoutMs()) * time.Millisecond}
	t.CPUMillicores, t.MemoryBytes = req.GetCpuMillicores(), req.GetMemoryBytes()
	if field := forwardedRefs(&t, req.GetDataRefsJson()); field != "" {
		return t, failureResponse(gateway.NewError(schemas.CodeInvalidParams).With("operator", t.Operator).
			With("field", field).With("reason", "malformed in the forwarded task")), nil
	}
	return t, nil, nil
}

// DispatchTaskStream implements gatehouse.v1.AgentPeerService: a task another replica
// forwards runs on one of this replica's agents, or on k distinct ones (redundancy), never
// forwarded again; the agents' progress reports are streamed before the answer.
func (s *peerService) DispatchTaskStream(req *gatehousev1.DispatchTaskStreamRequest, stream grpc.ServerStreamingServer[gatehousev1.DispatchTaskStreamResponse]) error {
	t, refused, err := s.task(req.GetTask())
	if err != nil {
		return err
	}
	if refused != nil {
		return stream.Send(&gatehousev1.DispatchTaskStreamResponse{Event: &gatehousev1.DispatchTaskStreamResponse_Result{Result: refused}})
	}
	k := max(1, int(req.GetRedundancy()))
	// agents.forwarded_progress_buffer reports wait to be sent to the forwarding replica;
	// past them a report is dropped (progress is advisory, the result is not).
	progress, report := progressBuffer(s.hub.cfg.ForwardedProgressBuffer)
	t.Progress = report
	ctx := stream.Context()
	done := make(chan *gatehousev1.DispatchTaskResponse, 1)
	go func() {
		var res *gatehousev1.DispatchTaskResponse
		if k > 1 {
			res = runsResponse(s.hub.dispatchRedundant(ctx, t, k, false))
		} else {
			res, _ = outcomeResponse(s.hub.dispatchLocal(ctx, t))
		}
		done <- res
	}()
	sendProgress := func(p *gatehousev1.ForwardedProgress) error {
		return stream.Send(&gatehousev1.DispatchTaskStreamResponse{Event: &gatehousev1.DispatchTaskStreamResponse_Progress{Progress: p}})
	}
	for {
		select {
		case p := <-progress:
			if err := sendProgress(p); err != nil {
				<-done // the stream broke: its context ends the task
				return err
			}
		case res := <-done:
			for len(progress) > 0 {
				if err := sendProgress(<-progress); err != nil {
					return err
				}
			}
			if res == nil {
				return status.Error(codes.Internal, "the outcome could not be encoded")
			}
			return stream.Send(&gatehousev1.DispatchTaskStreamResponse{Event: &gatehousev1.DispatchTaskStreamResponse_Result{Result: res}})
		}
	}
}

// progressBuffer returns a queue of n progress reports and the function that adds one to
// it without waiting: a report that finds the queue full is dropped (progress is
// advisory; the result never goes through it).
func progressBuffer(n int) (chan *gatehousev1.ForwardedProgress, func(gateway.Progress)) {
	ch := make(chan *gatehousev1.ForwardedProgress, n)
	return ch, func(p gateway.Progress) {
		fp := &gatehousev1.ForwardedProgress{Progress: p.Progress, Message: p.Message}
		if p.Total != nil {
			fp.Total, fp.HasTotal = *p.Total, true
		}
		select {
		case ch <- fp:
		default:
		}
	}
}

// runsResponse is the answer for a redundant task's runs, or for its failure as a whole.
func runsResponse(runs []Run, failure error) *gatehousev1.DispatchTaskResponse {
	if failure != nil {
		return failureResponse(failure)
	}
	res := &gatehousev1.DispatchTaskResponse{}
	for _, r := range runs {
		dr := &gatehousev1.DispatchRun{Agent: r.Agent}
		if r.Err != nil {
			dr.Failure = failureResponse(r.Err).GetFailure()
		} else if raw, err := json.Marshal(r.Outcome); err == nil {
			dr.OutcomeJson = raw
		} else {
			dr.Failure = failureResponse(gateway.NewError(schemas.CodeInternal).Wrap(err)).GetFailure()
		}
		res.Runs = append(res.Runs, dr)
	}
	return res
}

// runsOf decodes the runs a serving replica answered.
func runsOf(res *gatehousev1.DispatchTaskResponse, op string) []Run {
	runs := make([]Run, 0, len(res.GetRuns()))
	for _, r := range res.GetRuns() {
		run := Run{Agent: r.GetAgent()}
		if f := r.GetFailure(); f != nil {
			run.Err = failureError(f)
		} else {
			var o Outcome
			if err := json.Unmarshal(r.GetOutcomeJson(), &o); err != nil {
				run.Err = gateway.NewError(schemas.CodeInternal).With("operator", op).Wrap(err)
			} else {
				run.Outcome = &o
			}
		}
		runs = append(runs, run)
	}
	return runs
}

// forwardedRefs decodes a forwarded task's data refs into t and checks its job id; it
// returns the member that is malformed, "" when none is.
func forwardedRefs(t *Task, raw []byte) string {
	if len(raw) > 0 && (json.Unmarshal(raw, &t.Refs) != nil || len(t.Refs) > maxRefs) {
		return ParamDataRefs
	}
	if t.JobID != "" && !validAgentID(t.JobID) {
		return ParamJobID
	}
	return ""
}

// outcomeResponse is the answer for a task's outcome, or for its failure: the failure is
// an answer, its code and data carried as they are, not a status.
func outcomeResponse(out *Outcome, failure error) (*gatehousev1.DispatchTaskResponse, error) {
	if failure != nil {
		return failureResponse(failure), nil
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, status.Error(codes.Internal, "the outcome could not be encoded")
	}
	return &gatehousev1.DispatchTaskResponse{OutcomeJson: raw}, nil
}

// failureResponse carries err (a gateway error, or made one) to the forwarding replica.
func failureResponse(err error) *gatehousev1.DispatchTaskResponse {
	ge := gateway.AsError(err)
	f := &gatehousev1.TaskFailure{Code: int32(ge.Code()), Message: ge.Message()}
	if d := ge.Data(); len(d) > 0 {
		f.DataJson, _ = json.Marshal(d)
	}
	return &gatehousev1.DispatchTaskResponse{Failure: f}
}

// traceMetadata puts ctx's W3C trace context (traceparent, tracestate) into the outgoing
// metadata, so the serving replica's span continues the call's trace.
func traceMetadata(ctx context.Context) context.Context {
	md := metadata.MD{}
	propagation.TraceContext{}.Inject(ctx, metadataCarrier(md))
	if len(md) == 0 {
		return ctx
	}
	return metadata.NewOutgoingContext(ctx, md)
}

type metadataCarrier metadata.MD

func (c metadataCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}
func (c metadataCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }
func (c metadataCarrier) Keys() []string        { return slices.Collect(maps.Keys(c)) }

// registerPeerService registers gatehouse.v1.AgentPeerService on s.
func (h *Hub) registerPeerService(s grpc.ServiceRegistrar) {
	gatehousev1.RegisterAgentPeerServiceServer(s, &peerService{hub: h})
}
