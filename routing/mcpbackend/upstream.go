package mcpbackend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// upstream is one configured MCP server: a pool of supervised sessions, its concurrency
// cap, its catalog and its resource subscriptions.
type upstream struct {
	shared sharing // the bridges that own it and its lifetime (shared.go)
	cfg    Config
	hop    gateway.HopAuth // from cfg.DownstreamToken
	log    *slog.Logger
	ctx    context.Context // ends when the last bridge sharing it closes (shared.go)

	slots      []atomic.Pointer[session]
	sem        chan struct{}         // nil: no cap
	httpLegacy atomic.Bool           // a streamable HTTP server turned out to speak a handshake revision
	aff        *affinity             // session_affinity caller: the callers' sessions (affinity.go); nil: shared
	probe      atomic.Pointer[Probe] // what the last connection learnt the server speaks (discover.go)

	tokens   atomic.Uint64
	progress sync.Map // progress token (string) → func(Progress)
	latency  atomic.Int64

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced whenever a slot's session changes
	reason   string        // why the upstream is down, while it is
	retryAt  time.Time     // the next connection attempt, while down
	restarts int
	subs     map[string]int // resource URI → subscribers

	pending   atomic.Uint32 // catalog kinds waiting to be refreshed
	refreshCh chan struct{}
	cat       atomic.Pointer[serverCatalog]
	loaded    chan struct{}
	loadOnce  sync.Once

	wg sync.WaitGroup
}

func newUpstream(b *Bridge, cfg Config) *upstream {
	u := &upstream{shared: newSharing(b), cfg: cfg, hop: cfg.DownstreamToken.HopAuth(cfg.Name), log: b.log.With("upstream", cfg.Name),
		slots: make([]atomic.Pointer[session], cfg.Sessions), changed: make(chan struct{}),
		reason: "connecting", subs: map[string]int{}, refreshCh: make(chan struct{}, 1), loaded: make(chan struct{})}
	u.ctx, u.shared.cancel = context.WithCancel(context.Background())
	if cfg.MaxConcurrent > 0 {
		u.sem = make(chan struct{}, cfg.MaxConcurrent)
	}
	if cfg.SessionAffinity == AffinityCaller {
		u.aff = newAffinity(u, b.store)
	}
	return u
}

func (u *upstream) start() {
	if u.shared.started.Swap(true) {
		return // carried over from a previous bridge: already running
	}
	for i := range u.slots {
		u.wg.Go(func() { u.supervise(i) })
	}
	u.wg.Go(u.refresher)
	if u.aff != nil {
		u.wg.Go(u.aff.janitor)
	}
}

// close ends supervision and every session; it returns once all is stopped.
func (u *upstream) close() {
	u.wg.Wait() // the supervisors close their sessions once ctx is done
}

// supervise keeps slot's session alive: connect, watch, and on failure reconnect with
// exponential backoff and jitter.
func (u *upstream) supervise(slot int) {
	r := u.cfg.Restart
	backoff := r.Initial
	for u.ctx.Err() == nil {
		ctx, cancel := context.WithTimeout(u.ctx, u.cfg.ConnectTimeout)
		s, err := u.connect(ctx, slot)
		cancel()
		if err != nil {
			if u.ctx.Err() != nil {
				return
			}
			u.log.Warn("connecting to MCP server failed", "slot", slot, "err", err, "retry_in", backoff.String())
			if !u.pause(slot, connectReason(err), backoff) {
				return
			}
			backoff = min(backoff*2, r.Max)
			continue
		}
		u.up(slot, s)
		reason, expired := u.watch(s)
		u.down(slot, s)
		if u.ctx.Err() != nil {
			s.close()
			return
		}
		s.fail(reason, expired)
		if expired {
			u.log.Info("MCP session expired; starting a new one", "slot", slot)
			u.wg.Go(func() { u.drain(s) })
			backoff = r.Initial
			continue
		}
		if u.owner().now().Sub(s.started) >= r.Max {
			backoff = r.Initial
		}
		u.log.Warn("MCP session lost; restarting", "slot", slot, "reason", reason, "retry_in", backoff.String())
		if !u.pause(slot, reason, backoff) {
			return
		}
		backoff = min(backoff*2, r.Max)
	}
}

// pause records why the slot is down and waits the jittered delay; false once closing.
func (u *upstream) pause(slot int, reason string, d time.Duration) bool {
	d = time.Duration(float64(d) * (1 - u.cfg.Restart.Jitter*rand.Float64())) //nolint:gosec // jitter needs no cryptographic randomness
	u.mu.Lock()
	u.reason, u.retryAt = reason, u.owner().now().Add(d)
	u.restarts++
	u.mu.Unlock()
	u.rebuildOwners()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-u.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// up installs a new live session in slot and asks for the catalog to be reloaded.
func (u *upstream) up(slot int, s *session) {
	u.slots[slot].Store(s)
	u.probe.Store(s.probe())
	u.mu.Lock()
	u.reason = ""
	close(u.changed)
	u.changed = make(chan struct{})
	subs := make([]string, 0, len(u.subs))
	for uri := range u.subs {
		subs = append(subs, uri)
	}
	u.mu.Unlock()
	attrs := []any{"slot", slot, "protocol", s.version}
	if s.child != nil {
		attrs = append(attrs, "pid", s.child.pid())
	}
	u.log.Info("MCP session started", attrs...)
	if fn := u.owner().sessionStarted; fn != nil {
		fn(u.cfg.Name)
	}
	if !mcp.IsModernProtocol(s.version) {
		for _, uri := range subs {
			u.wg.Go(func() { _ = u.subscribeOn(s, uri) })
		}
	}
	u.requestRefresh(kindAll)
}

// down removes a session that stopped being live.
func (u *upstream) down(slot int, s *session) {
	u.slots[slot].CompareAndSwap(s, nil)
	u.mu.Lock()
	close(u.changed)
	u.changed = make(chan struct{})
	u.mu.Unlock()
	u.rebuildOwners()
}

// watch returns when s stops being usable: the child exited, a ping failed or timed out,
// the session expired, or the bridge is closing.
func (u *upstream) watch(s *session) (reason string, expired bool) {
	hb := u.cfg.Heartbeat
	period := hb.Interval - hb.Timeout
	t := time.NewTimer(period)
	defer t.Stop()
	var exited <-chan struct{}
	if s.child != nil {
		exited = s.child.exited
	}
	for {
		select {
		case <-u.ctx.Done():
			return "gateway closing", false
		case <-s.dead:
			return s.reason, s.expired
		case <-exited:
			return s.child.exitReason(), false
		case <-t.C:
		}
		if reason, expired := u.heartbeat(s); reason != "" {
			return reason, expired
		}
		t.Reset(period)
	}
}

// heartbeat pings s once; it returns why s is unusable, or "".
func (u *upstream) heartbeat(s *session) (reason string, expired bool) {
	timeout := u.cfg.Heartbeat.Timeout
	x := &exchange{}
	ctx, cancel := context.WithTimeout(withExchange(u.ctx, x), timeout)
	err := s.ping(ctx)
	cancel()
	switch {
	case err == nil || u.ctx.Err() != nil:
		return "", false
	case u.cfg.Stdio == nil && isExpiry(err, x):
		return "session expired", true
	case s.child != nil && waitClosed(s.child.exited, 50*time.Millisecond):
		return s.child.exitReason(), false
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer to ping within " + timeout.String(), false
	case x.rpcErr != nil:
		return "", false // it answered, if with an error: alive
	default:
		return "ping failed", false
	}
}

// drain closes an expired session once its in-flight requests have finished.
func (u *upstream) drain(s *session) {
	deadline := time.Now().Add(u.cfg.RequestTimeout)
	for s.inflight.Load() > 0 && time.Now().Before(deadline) && u.ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	s.close()
}

// pick returns the least loaded live session, or nil.
func (u *upstream) pick() *session {
	var best *session
	for i := range u.slots {
		s := u.slots[i].Load()
		if s == nil || s.isDead() {
			continue
		}
		if best == nil || s.inflight.Load() < best.inflight.Load() {
			best = s
		}
	}
	return best
}

// live reports how many sessions are up.
func (u *upstream) live() int {
	n := 0
	for i := range u.slots {
		if s := u.slots[i].Load(); s != nil && !s.isDead() {
			n++
		}
	}
	return n
}

// waitReplacement waits until a session other than old is live.
func (u *upstream) waitReplacement(ctx context.Context, old *session) bool {
	t := time.NewTimer(u.cfg.ConnectTimeout)
	defer t.Stop()
	for {
		u.mu.Lock()
		ch := u.changed
		u.mu.Unlock()
		if s := u.pick(); s != nil && s != old {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		case <-t.C:
			return false
		}
	}
}

// admit takes a slot under the concurrency cap, waiting up to QueueTimeout and never so
// long that less than ε would be left before hop, the request's deadline (zero: none).
// A wait cut short by the deadline is the gateway's (DEADLINE_EXCEEDED, layer gateway);
// one that outlasts QueueTimeout is OVERLOADED.
func (u *upstream) admit(ctx context.Context, hop time.Time, budget gateway.HopBudget) (release func(), err error) {
	if u.sem == nil {
		return func() {}, nil
	}
	release = func() { <-u.sem }
	select {
	case u.sem <- struct{}{}:
		return release, nil
	default:
	}
	wait, byDeadline := u.cfg.QueueTimeout, false
	if !hop.IsZero() {
		if left := time.Until(hop) - budget.MinRemaining; left < wait {
			wait, byDeadline = max(left, 0), true
		}
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case u.sem <- struct{}{}:
		return release, nil
	case <-t.C:
		if byDeadline {
			return nil, gateway.ErrDeadline(gateway.LayerGateway).With("upstream", u.cfg.Name).
				With("waiting_for", "max_concurrent").With("retry_after_ms", u.retryAfterMs())
		}
		return nil, u.overloaded()
	case <-ctx.Done():
		return nil, wrapContext(ctx.Err(), u.cfg.Name)
	}
}

// do runs one request on a live session, under the cap and the request timeout: the
// request's deadline is the earlier of now + request_timeout and the call's deadline less
// the hop reserve, and a request left with less than ε is not sent (DEADLINE_EXCEEDED,
// layer upstream). A streamable HTTP session the server has forgotten is replaced and the
// request retried once; it had not run, since the server refused the session.
func (u *upstream) do(ctx context.Context, fn func(context.Context, *session) error) (*exchange, error) {
	rctx, sl, err := u.bounded(ctx)
	if err != nil {
		return nil, err
	}
	defer sl.end()
	s, ce, err := u.session(rctx) // the pool's, or the caller's own (affinity.go)
	if err != nil {
		return nil, err
	}
	if ce != nil {
		defer u.aff.release(ce)
	}
	for attempt := 0; ; attempt++ {
		if s == nil {
			return nil, u.unavailable("").NotSent() // no live session: nothing was written
		}
		start := time.Now()
		x, err := runOn(ctx, rctx, s, fn)
		if err == nil {
			u.observe(time.Since(start))
			return x, nil
		}
		if attempt == 0 && u.cfg.Stdio == nil && isExpiry(err, x) && rctx.Err() == nil {
			if ce != nil {
				if s, err = u.aff.renew(rctx, ce, s); err != nil {
					return nil, err
				}
				continue
			}
			s.fail("session expired", true)
			if u.waitReplacement(rctx, s) {
				s = u.pick()
				continue
			}
		}
		if ce != nil && s.broken(err) {
			u.aff.drop(ce, s, true)
		}
		return nil, u.callError(ctx, rctx, s, err, x)
	}
}

// bounded admits one request of ctx's call under the upstream's cap and returns the
// request's context: its deadline is the earlier of now + request_timeout and the call's
// deadline less the hop reserve (a request left with less than ε is not sent:
// DEADLINE_EXCEEDED, layer upstream). The slot's end ends the context and frees the slot.
func (u *upstream) bounded(ctx context.Context) (context.Context, slot, error) {
	hop, budget, err := u.hopDeadline(ctx)
	if err != nil {
		return nil, slot{}, err
	}
	release, err := u.admit(ctx, hop, budget)
	if err != nil {
		return nil, slot{}, err
	}
	rdl := time.Now().Add(u.cfg.RequestTimeout)
	if !hop.IsZero() && hop.Before(rdl) {
		rdl = hop
	}
	rctx, cancel := context.WithDeadline(ctx, rdl)
	return rctx, slot{cancel: cancel, release: release}, nil
}

// slot is a request admitted by bounded (a value, so that the hot path allocates nothing
// for it).
type slot struct {
	cancel  context.CancelFunc
	release func()
}

// end ends the request's context and frees its place under the cap.
func (s slot) end() {
	s.cancel()
	s.release()
}

// runOn runs fn on s as one request of ctx's call, in rctx: counted in flight on s and
// attributed to the call's peer while it runs.
func runOn(ctx, rctx context.Context, s *session, fn func(context.Context, *session) error) (*exchange, error) {
	x := &exchange{}
	s.inflight.Add(1)
	leave := s.calls.enter(peerFrom(ctx))
	err := fn(withExchange(rctx, x), s)
	leave()
	s.inflight.Add(-1)
	return x, err
}

// observe feeds the latency estimate behind retry_after_ms.
func (u *upstream) observe(d time.Duration) {
	old := u.latency.Load()
	u.latency.Store(old - old/8 + int64(d)/8)
}

// retryAfterMs suggests when to retry a call refused for load.
func (u *upstream) retryAfterMs() int64 {
	return max(time.Duration(u.latency.Load()).Milliseconds(), 10)
}

// newToken returns a progress token unique within the upstream.
func (u *upstream) newToken() string {
	return "gatehouse-" + strconv.FormatUint(u.tokens.Add(1), 10)
}

// notification handles one notification from a session. It runs on the session's
// reader, so it never blocks.
func (u *upstream) notification(s *session, n mcp.JSONRPCNotification) {
	fields := n.Params.AdditionalFields
	switch n.Method {
	case string(mcp.MethodNotificationProgress):
		u.relayProgress(fields)
	case string(mcp.MethodNotificationToolsListChanged):
		u.requestRefresh(kindTools)
	case string(mcp.MethodNotificationResourcesListChanged):
		u.requestRefresh(kindResources | kindTemplates)
	case string(mcp.MethodNotificationPromptsListChanged):
		u.requestRefresh(kindPrompts)
	case string(mcp.MethodNotificationResourceUpdated):
		if uri, ok := fields["uri"].(string); ok {
			u.emitOwners(Event{Kind: EventResourceUpdated, Upstream: u.cfg.Name, URI: uri})
		}
	case string(mcp.MethodNotificationMessage):
		u.relayLog(s, fields)
	default:
		u.log.Debug("upstream notification ignored", "method", n.Method)
	}
}

func (u *upstream) relayProgress(fields map[string]any) {
	token, ok := fields["progressToken"].(string)
	if !ok {
		return
	}
	fn, ok := u.progress.Load(token)
	if !ok {
		return
	}
	p := Progress{}
	p.Progress, _ = fields["progress"].(float64)
	if t, ok := fields["total"].(float64); ok {
		p.Total = &t
	}
	p.Message, _ = fields["message"].(string)
	fn.(func(Progress))(p)
}

// subscribedURIs returns the URIs with subscribers.
func (u *upstream) subscribedURIs() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]string, 0, len(u.subs))
	for uri := range u.subs {
		out = append(out, uri)
	}
	return out
}

// status reports the upstream's state.
func (u *upstream) status() UpstreamStatus {
	u.mu.Lock()
	defer u.mu.Unlock()
	st := UpstreamStatus{Name: u.cfg.Name, Sessions: len(u.slots), Restarts: u.restarts}
	for i := range u.slots {
		if s := u.slots[i].Load(); s != nil && !s.isDead() {
			st.Live++
			st.ProtocolVersion = s.version
		}
	}
	st.Probe = u.probe.Load()
	if u.aff != nil {
		st.CallerSessions = u.aff.held()
	}
	if st.Live == 0 {
		st.Reason = u.reason
		if !u.retryAt.IsZero() {
			st.RetryAfterMs = max(u.retryAt.Sub(u.owner().now()).Milliseconds(), 0)
		}
	}
	return st
}

// UpstreamStatus is the state of one upstream.
type UpstreamStatus struct {
	// Name is the upstream's name.
	Name string `json:"name"`
	// Sessions is the pool size; Live is how many sessions are up.
	Sessions int `json:"sessions"`
	Live     int `json:"live"`
	// ProtocolVersion is the version negotiated with the server.
	ProtocolVersion string `json:"protocol_version,omitempty"`
	// Reason says why no session is up; RetryAfterMs is when the next attempt starts.
	Reason       string `json:"reason,omitempty"`
	RetryAfterMs int64  `json:"retry_after_ms,omitempty"`
	// Restarts counts the times a session was lost or failed to start.
	Restarts int `json:"restarts"`
	// Probe is what the server was found to speak when the pool last connected
	// (discover.go); nil before.
	Probe *Probe `json:"probe,omitempty"`
	// CallerSessions is how many callers' sessions this process holds under
	// session_affinity caller.
	CallerSessions int `json:"caller_sessions,omitempty"`
}

func (st UpstreamStatus) String() string {
	if st.Live > 0 {
		return fmt.Sprintf("%s: %d/%d sessions up (%s)", st.Name, st.Live, st.Sessions, st.ProtocolVersion)
	}
	return fmt.Sprintf("%s: down (%s)", st.Name, st.Reason)
}

// connectReason is the client-safe reason for a failed connection attempt (the error
// itself, which may name hosts and paths, is logged).
func connectReason(err error) string {
	if v, ok := errors.AsType[errVersion](err); ok {
		return "protocol version mismatch: the server chose " + v.got
	}
	if ce, ok := errors.AsType[*childExit](err); ok {
		return ce.reason
	}
	return "could not start a session"
}

// hopDeadline returns the deadline of a request made for a call under ctx — the call's
// deadline less the hop reserve; zero when ctx has none — and the call's hop budget. A
// hop left with less than ε is refused: DEADLINE_EXCEEDED, layer upstream.
func (u *upstream) hopDeadline(ctx context.Context) (time.Time, gateway.HopBudget, error) {
	budget := gateway.HopBudgetFrom(ctx)
	dl, ok := ctx.Deadline()
	if !ok {
		return time.Time{}, budget, nil
	}
	hop, err := budget.Deadline(time.Now(), dl, gateway.LayerUpstream)
	if err != nil {
		return hop, budget, err.With("upstream", u.cfg.Name)
	}
	return hop, budget, nil
}
