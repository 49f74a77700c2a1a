package mcpface

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
)

// Multi round-trip requests (MRTR) for callers of protocol 2026-07-28, which have no
// requests from the server during a call.
//
// A tools/call or prompts/get of such a caller that declared sampling or elicitation in
// its request's clientCapabilities runs as a call of its own (mrtrCall), detached from
// the HTTP request that started it. When its upstream asks for sampling/createMessage or
// elicitation/create (a 2025-11-25 upstream's request, or a 2026-07-28 upstream's own
// input_required result that the bridge's client loop turns into the same request), the
// bridge hands it to the call's peer (mrtrPeer), which parks it: the caller's request
// ends with an input_required result whose inputRequests are keyed by ids the face
// assigns and whose requestState is a signed token (mrtrstate.go) naming this process
// and the call. The upstream's request waits. The caller retries the same request with
// inputResponses and the requestState; the face checks the token (signature, expiry,
// caller, method and name, single use), hands the answers to the waiting upstream
// requests and answers the retry with what the call does next: its result, or another
// input_required round. A retry that reaches another replica is forwarded to the owner
// over the state store's bus (mrtrbus.go).

// mrtrUsedPrefix prefixes the single-use records of requestStates in the state store.
const mrtrUsedPrefix = "mcp-mrtr-used:"

// mrtr holds the face's calls that may ask their caller for input.
type mrtr struct {
	cfg    MRTRConfig
	self   mrtrID // this process, as requestStates name it
	signer mrtrSigner
	kv     state.KV  // single-use records; nil: checked in memory only
	bus    state.Bus // forwarding between replicas; nil: none
	now    func() time.Time
	log    *slog.Logger
	srv    *mcpserver.MCPServer

	ctx  context.Context // the face's life: forwarded retries run under it
	stop context.CancelFunc
	wg   sync.WaitGroup // the calls' runs, the bus listener, forwarded retries

	mu     sync.Mutex
	calls  map[mrtrID]*mrtrCall
	parked int
	closed bool

	lmu       sync.Mutex
	listening bool // the bus listener runs (mrtrbus.go); guarded by lmu

	fmu      sync.Mutex
	forwards map[string]*mrtrForward // retries this process forwarded, by forward id

	relay func(mrtrWire) mrtrOutcome // serves relayed requests' messages (relaybus.go); set before listening
}

func newMRTR(cfg MRTRConfig, key []byte, kv state.KV, srv *mcpserver.MCPServer, now func() time.Time, log *slog.Logger) *mrtr {
	if len(key) == 0 {
		key = make([]byte, MinSessionKeyBytes)
		_, _ = rand.Read(key) // crypto/rand.Read never fails (it crashes the program instead)
	}
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &mrtr{cfg: cfg, signer: mrtrSigner{key: key}, kv: kv, now: now, log: log, srv: srv,
		calls: map[mrtrID]*mrtrCall{}, forwards: map[string]*mrtrForward{}}
	_, _ = rand.Read(m.self[:])
	if b, ok := kv.(state.Bus); ok {
		m.bus = b
	}
	m.ctx, m.stop = context.WithCancel(context.Background())
	return m
}

// mrtrOutcome is what a call did for one request: it ended (Result, or Err), or it asks
// the caller for input (Input, State). It crosses the bus as JSON.
type mrtrOutcome struct {
	Result  json.RawMessage            `json:"result,omitempty"`
	Err     *gateway.Error             `json:"-"`
	WireErr *mrtrWireErr               `json:"error,omitempty"`
	TraceID string                     `json:"trace_id,omitempty"`
	Input   map[string]json.RawMessage `json:"input,omitempty"` // id -> {"method", "params"}
	State   string                     `json:"state,omitempty"`
}

// needsInput reports whether the outcome asks the caller for input.
func (o mrtrOutcome) needsInput() bool { return o.State != "" }

// inputRequired is the outcome as the multi round-trip fields of a result.
func (o mrtrOutcome) inputRequired() (mcp.Result, mcp.MultiRoundTripResult, error) {
	reqs := make(mcp.InputRequests, len(o.Input))
	for id, raw := range o.Input {
		var r mcp.InputRequest
		if err := json.Unmarshal(raw, &r); err != nil {
			return mcp.Result{}, mcp.MultiRoundTripResult{}, gateway.Errorf(schemas.CodeInternal, "The upstream's input request is malformed").Wrap(err)
		}
		reqs[id] = r
	}
	return mcp.Result{ResultType: mcp.ResultTypeInputRequired}, mcp.MultiRoundTripResult{InputRequests: reqs, RequestState: o.State}, nil
}

// mrtrWireErr is a *gateway.Error on the bus.
type mrtrWireErr struct {
	Code    schemas.Code   `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data,omitempty"`
}

func (w *mrtrWireErr) toError() *gateway.Error {
	e := gateway.Errorf(w.Code, "%s", w.Message)
	for k, v := range w.Data {
		e = e.With(k, v)
	}
	return e
}

// mrtrCall is one call that may ask its caller for input.
type mrtrCall struct {
	id        mrtrID
	principal [mrtrHashBytes]byte
	target    [mrtrHashBytes]byte
	cancel    context.CancelFunc // cancels the upstream call
	notify    chan struct{}      // an ask arrived or the call ended (capacity 1)

	mu      sync.Mutex
	round   uint32              // input_required rounds handed out
	parked  bool                // waiting for the caller's retry
	closed  bool                // expired or abandoned: further asks are refused
	timer   *time.Timer         // ends the parking (parked_timeout)
	seq     int                 // numbers the input request ids
	pending []*mrtrAsk          // asks not yet handed to the caller
	sent    map[string]*mrtrAsk // asks of the current round, by the id the caller got
	done    bool
	final   mrtrOutcome
	live    context.Context // the caller's request now waiting on the call, for log and progress; nil when none
}

// mrtrAsk is one upstream request waiting for the caller's answer.
type mrtrAsk struct {
	method string
	params json.RawMessage
	reply  chan mrtrAnswer // capacity 1, sent to once
}

type mrtrAnswer struct {
	result json.RawMessage
	err    error
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// liveCtx is the context of the caller's request now waiting on the call, or nil.
func (c *mrtrCall) liveCtx() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live
}

// mrtrParams are what a request of a caller says of multi round trips.
type mrtrParams struct {
	method, name string
	principal    gateway.Principal
	caps         mcpbackend.PeerCapabilities
	state        string
	responses    mcp.InputResponses
}

// mrtrRequest returns the multi round-trip view of a request of ctx, and whether the face
// serves it as one: a caller of 2026-07-28 retrying with a requestState, or declaring
// sampling or elicitation in its clientCapabilities.
func (f *Face) mrtrRequest(ctx context.Context, method, name string, mp mcp.MultiRoundTripParams) (mrtrParams, bool) {
	info := mcpserver.RequestProtocolInfoFromContext(ctx)
	if f.mrtr == nil || info == nil || !info.Modern {
		return mrtrParams{}, false
	}
	p := mrtrParams{method: method, name: name, state: mp.RequestState, responses: mp.InputResponses}
	p.principal, _ = ctx.Value(principalKey{}).(gateway.Principal)
	p.caps = modernCaps(info)
	return p, p.state != "" || p.caps.Sampling || p.caps.Elicitation
}

// modernCaps are the capabilities a 2026-07-28 request declared for itself.
func modernCaps(info *mcpserver.RequestProtocolInfo) mcpbackend.PeerCapabilities {
	caps := mcpbackend.PeerCapabilities{LogLevel: string(info.LogLevel)}
	if cc := info.ClientCapabilities; cc != nil {
		caps.Sampling = cc.Sampling != nil
		// An empty elicitation capability means form mode.
		caps.Elicitation = cc.Elicitation != nil && (cc.Elicitation.Form != nil || cc.Elicitation.URL == nil)
	}
	return caps
}

// run serves one request of a multi round-trip exchange: a first request starts the call
// (invoke runs it, under a context detached from the request's and carrying the call's
// peer; live returns the caller's request now waiting, for its log and progress
// messages), a retry continues it, here or on the replica holding it.
func (m *mrtr) run(ctx context.Context, p mrtrParams, invoke func(ctx context.Context, live func() context.Context) mrtrOutcome) mrtrOutcome {
	if p.state != "" {
		return m.retry(ctx, p)
	}
	return m.start(ctx, p, invoke)
}

// start runs invoke as a new call and waits for its first outcome.
func (m *mrtr) start(ctx context.Context, p mrtrParams, invoke func(ctx context.Context, live func() context.Context) mrtrOutcome) mrtrOutcome {
	if m.bus != nil {
		if err := m.listen(); err != nil { // a retry on another replica must find this one
			m.log.WarnContext(ctx, "MCP multi round trips: not listening for retries forwarded by other replicas", "err", err)
		}
	}
	c := &mrtrCall{principal: principalHash(p.principal), target: targetHash(p.method, p.name),
		notify: make(chan struct{}, 1), sent: map[string]*mrtrAsk{}, live: ctx}
	_, _ = rand.Read(c.id[:])
	// The call outlives the request that starts it, but not a deadline the request had.
	var rctx context.Context
	var cancel context.CancelFunc
	if dl, ok := ctx.Deadline(); ok {
		rctx, cancel = context.WithDeadline(context.WithoutCancel(ctx), dl)
	} else {
		rctx, cancel = context.WithCancel(context.WithoutCancel(ctx))
	}
	c.cancel = cancel
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		cancel()
		return mrtrOutcome{Err: gateway.Errorf(schemas.CodeShuttingDown, "The gateway is shutting down")}
	}
	m.calls[c.id] = c
	m.wg.Add(1)
	m.mu.Unlock()
	rctx = mcpbackend.WithPeer(rctx, &mrtrPeer{m: m, c: c, caps: p.caps})
	go func() {
		defer m.wg.Done()
		defer cancel()
		out := invoke(rctx, c.liveCtx)
		c.mu.Lock()
		c.done, c.final = true, out
		closed := c.closed
		c.mu.Unlock()
		signal(c.notify)
		if closed {
			m.remove(c)
		}
	}()
	return m.await(ctx, c)
}

// await waits, for the request of ctx, for what the call does next: it ends, or it asks
// for input (then the call is parked and the outcome carries the round's requestState).
// The request ending first abandons the call.
func (m *mrtr) await(ctx context.Context, c *mrtrCall) mrtrOutcome {
	c.mu.Lock()
	c.live = ctx
	c.mu.Unlock()
	for {
		c.mu.Lock()
		if c.done {
			out := c.final
			c.closed, c.live = true, nil
			c.mu.Unlock()
			m.remove(c)
			return out
		}
		if len(c.pending) > 0 {
			if out, ok := m.park(c); ok {
				c.mu.Unlock()
				return out
			}
		}
		c.mu.Unlock()
		select {
		case <-c.notify:
		case <-ctx.Done():
			m.abandon(c, gateway.Errorf(schemas.CodeCancelled, "The calling MCP client went away before it was asked"))
			return mrtrOutcome{Err: gateway.AsError(ctx.Err())}
		}
	}
}

// park hands the call's pending asks to the caller as one input_required round; c.mu is
// held. When the process holds max_parked calls already, or is shutting down, the asks
// are answered with an error instead and ok is false.
func (m *mrtr) park(c *mrtrCall) (mrtrOutcome, bool) {
	m.mu.Lock()
	var refusal *gateway.Error
	switch {
	case m.closed:
		refusal = gateway.Errorf(schemas.CodeShuttingDown, "The gateway is shutting down")
	case m.parked >= m.cfg.maxParked():
		refusal = gateway.Errorf(schemas.CodeOverloaded,
			"The gateway holds %d calls waiting for their callers' input already (mcp_face.mrtr.max_parked)", m.parked).
			With("reason", "max_parked")
	default:
		m.parked++
	}
	m.mu.Unlock()
	if refusal != nil {
		for _, a := range c.pending {
			a.reply <- mrtrAnswer{err: refusal}
		}
		c.pending = nil
		return mrtrOutcome{}, false
	}
	input := make(map[string]json.RawMessage, len(c.pending))
	for _, a := range c.pending {
		c.seq++
		id := "gatehouse-" + strconv.Itoa(c.seq)
		raw, err := json.Marshal(struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}{a.method, a.params})
		if err != nil { // params are JSON already: cannot happen
			a.reply <- mrtrAnswer{err: gateway.NewError(schemas.CodeInternal).Wrap(err)}
			continue
		}
		c.sent[id] = a
		input[id] = raw
	}
	c.pending = nil
	c.round++
	c.parked, c.live = true, nil
	ttl := m.cfg.parkedTimeout()
	st := m.signer.issue(mrtrState{owner: m.self, call: c.id, round: c.round, expires: m.now().Add(ttl),
		principal: c.principal, target: c.target})
	round := c.round
	c.timer = time.AfterFunc(ttl, func() { m.expire(c, round) })
	return mrtrOutcome{Input: input, State: st}, true
}

// expire ends a call whose caller did not retry within parked_timeout: its upstream
// requests get an error answer and the call is cancelled.
func (m *mrtr) expire(c *mrtrCall, round uint32) {
	c.mu.Lock()
	if !c.parked || c.round != round {
		c.mu.Unlock()
		return
	}
	c.parked = false
	c.mu.Unlock()
	m.unpark()
	m.log.Debug("MCP multi round trip: the caller did not answer in time", "call", c.id.String(), "round", round)
	m.abandon(c, gateway.Errorf(schemas.CodeDeadlineExceeded,
		"The calling MCP client did not answer within %v (mcp_face.mrtr.parked_timeout)", m.cfg.parkedTimeout()))
}

// abandon ends a call nobody waits for any more: asks are answered with err, and the
// upstream call is cancelled.
func (m *mrtr) abandon(c *mrtrCall, err error) {
	c.mu.Lock()
	asks := c.pending
	for _, a := range c.sent {
		asks = append(asks, a)
	}
	c.pending, c.sent = nil, map[string]*mrtrAsk{}
	c.closed, c.live = true, nil
	wasParked := c.parked
	c.parked = false
	if c.timer != nil {
		c.timer.Stop()
	}
	c.mu.Unlock()
	if wasParked {
		m.unpark()
	}
	for _, a := range asks {
		a.reply <- mrtrAnswer{err: err}
	}
	c.cancel()
	m.remove(c)
}

func (m *mrtr) unpark() {
	m.mu.Lock()
	m.parked--
	m.mu.Unlock()
}

func (m *mrtr) remove(c *mrtrCall) {
	m.mu.Lock()
	if m.calls[c.id] == c {
		delete(m.calls, c.id)
	}
	m.mu.Unlock()
}

// stateRefused is the error for a requestState the face does not accept.
func stateRefused(reason, why string) *gateway.Error {
	return gateway.Errorf(schemas.CodeInvalidParams, "The requestState is refused: %s", why).With("requestState", reason)
}

// callLost is the error for a retry whose call is no longer held anywhere it can reach:
// the client may send the request again, without inputResponses and requestState.
func callLost(why string) *gateway.Error {
	return gateway.Errorf(schemas.CodeInvalidParams,
		"The call this requestState continues is lost (%s): send the request again without requestState to start over", why).
		With("requestState", "lost")
}

// retry continues the call a requestState names, after checking it.
func (m *mrtr) retry(ctx context.Context, p mrtrParams) mrtrOutcome {
	st, err := m.check(ctx, p)
	if err != nil {
		m.log.DebugContext(ctx, "MCP multi round trip: retry refused", "method", p.method, "name", p.name, "err", err)
		return mrtrOutcome{Err: err, TraceID: observability.NewTraceID()}
	}
	responses := make(map[string]json.RawMessage, len(p.responses))
	for id, r := range p.responses {
		raw, err := json.Marshal(r)
		if err != nil {
			return mrtrOutcome{Err: gateway.Errorf(schemas.CodeInvalidParams, "The input response %q is malformed", id)}
		}
		responses[id] = raw
	}
	if st.owner != m.self {
		return m.forward(ctx, st, p.state, responses)
	}
	return m.resume(ctx, st, responses)
}

// check verifies a retry's requestState: signature and expiry, the caller, the method and
// name, and that it was not used before (recorded in the state store, so that a replay
// is refused on every replica).
func (m *mrtr) check(ctx context.Context, p mrtrParams) (mrtrState, *gateway.Error) {
	st, err := m.signer.verify(p.state, m.now())
	switch {
	case err == nil:
	case errors.Is(err, errStateExpired):
		return st, stateRefused("expired", "it expired (mcp_face.mrtr.parked_timeout)")
	case errors.Is(err, errStateSignature):
		return st, stateRefused("invalid", "it was not issued by this gateway or was altered")
	default:
		return st, stateRefused("invalid", "it is malformed")
	}
	if st.principal != principalHash(p.principal) {
		return st, stateRefused("other_caller", "it was issued to another caller")
	}
	if st.target != targetHash(p.method, p.name) {
		return st, stateRefused("other_request", "it continues another request than "+p.method+" of "+strconv.Quote(p.name))
	}
	if m.kv != nil {
		ok, err := m.kv.SetNX(ctx, mrtrUsedPrefix+st.key(), []byte{1}, st.expires.Sub(m.now())+time.Second)
		if err != nil {
			return st, gateway.Errorf(schemas.CodeUnavailable, "The state store did not answer").Wrap(err)
		}
		if !ok {
			return st, stateRefused("used", "it was used already (each requestState is good for one retry)")
		}
	}
	return st, nil
}

// resume hands a retry's answers to the call st names, held by this process, and waits
// for what it does next.
func (m *mrtr) resume(ctx context.Context, st mrtrState, responses map[string]json.RawMessage) mrtrOutcome {
	m.mu.Lock()
	c := m.calls[st.call]
	m.mu.Unlock()
	if c == nil {
		return mrtrOutcome{Err: callLost("the gateway no longer holds it: it ended, expired or its process restarted")}
	}
	if c.principal != st.principal || c.target != st.target { // signed together: cannot happen
		return mrtrOutcome{Err: stateRefused("invalid", "it does not match the call it names")}
	}
	c.mu.Lock()
	if !c.parked || c.round != st.round {
		c.mu.Unlock()
		return mrtrOutcome{Err: stateRefused("used", "it was used already (each requestState is good for one retry)")}
	}
	c.parked = false
	c.timer.Stop()
	asks := c.sent
	c.sent = map[string]*mrtrAsk{}
	c.mu.Unlock()
	m.unpark()
	for id, a := range asks {
		if r, ok := responses[id]; ok {
			a.reply <- mrtrAnswer{result: r}
		} else {
			a.reply <- mrtrAnswer{err: gateway.Errorf(schemas.CodeInvalidParams, "The calling MCP client's retry has no answer to %s (input %q)", a.method, id)}
		}
	}
	return m.await(ctx, c)
}

// close ends every call (Face.Shutdown) and waits for their runs and the bus listener.
func (m *mrtr) close() {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.closed = true
	calls := make([]*mrtrCall, 0, len(m.calls))
	for _, c := range m.calls {
		calls = append(calls, c)
	}
	m.mu.Unlock()
	for _, c := range calls {
		m.abandon(c, gateway.Errorf(schemas.CodeShuttingDown, "The gateway is shutting down"))
	}
	m.stop()
	m.wg.Wait()
}

// mrtrPeer is the caller of a multi round-trip call as the bridge sees it: upstream
// requests are parked for the caller's retry, log messages go to the caller's request
// now waiting on the call.
type mrtrPeer struct {
	m    *mrtr
	c    *mrtrCall
	caps mcpbackend.PeerCapabilities
}

var _ mcpbackend.Peer = (*mrtrPeer)(nil)

// ID implements mcpbackend.Peer.
func (p *mrtrPeer) ID() string { return "mrtr-" + p.c.id.String() }

// Capabilities implements mcpbackend.Peer: what the first request declared.
func (p *mrtrPeer) Capabilities() mcpbackend.PeerCapabilities { return p.caps }

// Log implements mcpbackend.Peer: to the request waiting on the call, if any, at the
// level that request asked for.
func (p *mrtrPeer) Log(params json.RawMessage) {
	ctx := p.c.liveCtx()
	if ctx == nil {
		return
	}
	var msg struct {
		Level  mcp.LoggingLevel `json:"level"`
		Logger string           `json:"logger"`
		Data   any              `json:"data"`
	}
	if err := json.Unmarshal(params, &msg); err != nil {
		return
	}
	if st := callStreamOf(ctx); st != nil { // onto that request's response (poststream.go)
		if wantsLog(ctx, msg.Level) {
			st.send(logNotification(msg.Level, msg.Logger, msg.Data))
		}
		return
	}
	if err := p.m.srv.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(msg.Level, msg.Logger, msg.Data)); err != nil {
		p.m.log.Debug("relaying an MCP log message", "err", err)
	}
}

// Request implements mcpbackend.Peer: the request waits, parked, for the caller's retry.
func (p *mrtrPeer) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	a := &mrtrAsk{method: method, params: params, reply: make(chan mrtrAnswer, 1)}
	c := p.c
	c.mu.Lock()
	if c.closed || c.done {
		c.mu.Unlock()
		return nil, gateway.Errorf(schemas.CodeCancelled, "The call that caused %s is no longer waiting for its caller", method)
	}
	c.pending = append(c.pending, a)
	c.mu.Unlock()
	signal(c.notify)
	select {
	case ans := <-a.reply:
		return ans.result, ans.err
	case <-ctx.Done():
		c.mu.Lock()
		for i, b := range c.pending {
			if b == a {
				c.pending = append(c.pending[:i], c.pending[i+1:]...)
				break
			}
		}
		for id, b := range c.sent {
			if b == a {
				delete(c.sent, id)
			}
		}
		c.mu.Unlock()
		return nil, gateway.AsError(ctx.Err())
	}
}
