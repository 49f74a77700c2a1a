package mcpbackend

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
)

// Session affinity (session_affinity: caller). A server on a handshake revision
// (2025-11-25 and before) keeps state per Mcp-Session-Id: its own memory, the log level,
// subscriptions, roots. Multiplexing every caller over the pool's sessions shares that
// state between callers; under "caller" each caller gets an upstream session of its own,
// which serves no one else.
//
// A caller is the principal — its token's issuer and subject, never the token's bytes, so
// a refreshed token keeps the session — and, for a 2025 client of the MCP face, its face
// session id: two sessions of one principal are two callers. A stateless 2026-07-28
// caller has no session of its own (the revision offers no client-chosen key), so it is
// its principal. An anonymous caller without a face session cannot be told from another
// and is refused.
//
// Over streamable HTTP the caller's record — the upstream Mcp-Session-Id, the negotiated
// version and the server's capabilities — is kept in the state store under the upstream's
// name and a hash of the caller, so any replica serves the caller's next request by
// resuming the same upstream session without a handshake. A session the upstream has
// forgotten (404) is replaced and the record with it. Over stdio and the legacy SSE
// transport a session cannot be resumed elsewhere: caller sessions are per process.
//
// An upstream that speaks the stateless revision keeps no session state by protocol;
// its calls go through the pool whatever the affinity.

// WithStore sets the state store in which caller sessions' records are kept
// (session_affinity caller, streamable HTTP); without one they are per process.
func WithStore(kv state.KV) Option { return func(b *Bridge) { b.store = kv } }

// affinityPrefix begins every record's key: affinityPrefix + upstream + ":" + caller hash.
const affinityPrefix = "mcpaff:"

// storeTimeout bounds one state store operation of the affinity.
const storeTimeout = 2 * time.Second

// affinityRecord is a caller's upstream session as the state store keeps it.
type affinityRecord struct {
	// Session is the upstream's Mcp-Session-Id.
	Session string `json:"sid"`
	// Version is the negotiated protocol version.
	Version string `json:"version"`
	// Caps are the server's capabilities.
	Caps mcp.ServerCapabilities `json:"caps"`
	// Used is when a replica last used the session (Unix ms; refreshed at most every
	// quarter of the idle timeout by each replica).
	Used int64 `json:"used"`
}

// affinity holds one upstream's caller sessions in this process.
type affinity struct {
	u   *upstream
	kv  state.KV // nil: per process (no store, or a transport that cannot resume)
	cfg CallerSessionsConfig

	mu      sync.Mutex
	entries map[string]*callerEntry
	lru     *list.List // of *callerEntry, most recently used first
}

// callerEntry is one caller's session in this process.
type callerEntry struct {
	key   string // the caller's hash
	elem  *list.Element
	ready chan struct{} // closed once s or err is set
	err   error

	renewMu sync.Mutex // one replacement of an expired session at a time

	// Under affinity.mu:
	s        *session
	rec      []byte // the record as last written or read (nil: none)
	inflight int
	lastUsed time.Time
	touched  time.Time // when this process last refreshed the record
}

func newAffinity(u *upstream, kv state.KV) *affinity {
	a := &affinity{u: u, cfg: u.cfg.CallerSessions, entries: map[string]*callerEntry{}, lru: list.New()}
	if u.cfg.HTTP != nil {
		a.kv = kv
	}
	return a
}

// errAnonymousCaller refuses an anonymous caller without a session under caller affinity.
func errAnonymousCaller(upstream string) *gateway.Error {
	return gateway.Errorf(schemas.CodeAuthentication,
		"MCP upstream %q keeps a session per caller, and an anonymous caller without a session cannot be told apart", upstream).
		With("upstream", upstream)
}

// callerKey returns the hash that identifies the caller of ctx's call: the principal's
// issuer and subject, and the caller's MCP face session id when it has one. ok is false
// outside a call (the bridge's own requests, which go to the pool).
func callerKey(ctx context.Context, upstream string) (key string, ok bool, err error) {
	c := gateway.CallFrom(ctx)
	if c == nil {
		return "", false, nil
	}
	p := c.Principal
	var sid string
	if cs := mcpserver.ClientSessionFromContext(ctx); cs != nil {
		sid = cs.SessionID() // empty for a stateless 2026-07-28 request
	}
	if p.Anonymous && sid == "" {
		return "", false, errAnonymousCaller(upstream)
	}
	iss, _ := p.Claims["iss"].(string)
	kind := "key" // API keys, client certificates: no claims
	if p.Anonymous {
		kind = "anonymous"
	} else if p.Claims != nil {
		kind = "token"
	}
	h := sha256.New()
	for _, part := range []string{kind, iss, p.Subject, sid} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)), true, nil
}

// storeKey is the state store key of a caller's record.
func (a *affinity) storeKey(key string) string {
	return affinityPrefix + a.u.cfg.Name + ":" + key
}

// session returns the session serving ctx's caller, and the entry to release once the
// request is done (nil for a pool session). It is the pool's least loaded session when
// the call has no caller or the upstream speaks a stateless revision.
func (u *upstream) session(ctx context.Context) (*session, *callerEntry, error) {
	pool := u.pick()
	if u.aff == nil || pool == nil || mcp.IsModernProtocol(pool.version) {
		return pool, nil, nil
	}
	key, ok, err := callerKey(ctx, u.cfg.Name)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return pool, nil, nil
	}
	e, s, err := u.aff.acquire(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	return s, e, nil
}

// acquire returns key's entry, counted in flight, with its live session: this process's,
// else one resumed from the store, else a new one.
func (a *affinity) acquire(ctx context.Context, key string) (*callerEntry, *session, error) {
	for attempt := 0; ; attempt++ {
		a.mu.Lock()
		e := a.entries[key]
		if e == nil {
			if len(a.entries) >= a.cfg.Max && !a.evictLocked() {
				a.mu.Unlock()
				return nil, nil, a.u.overloaded().With("reason", "caller_sessions.max")
			}
			e = &callerEntry{key: key, ready: make(chan struct{}), inflight: 1, lastUsed: a.u.owner().now()}
			e.elem = a.lru.PushFront(e)
			a.entries[key] = e
			a.mu.Unlock()
			a.open(ctx, e)
		} else {
			e.inflight++
			a.lru.MoveToFront(e.elem)
			a.mu.Unlock()
			select {
			case <-e.ready:
			case <-ctx.Done():
				a.release(e)
				return nil, nil, wrapContext(ctx.Err(), a.u.cfg.Name)
			}
		}
		if e.err != nil {
			a.release(e)
			return nil, nil, e.err
		}
		a.mu.Lock()
		s := e.s
		a.mu.Unlock()
		if !s.gone() || attempt > 0 {
			return e, s, nil
		}
		// A stdio child that exited, a transport that closed: forget it here, keep any
		// record (the upstream session may well live on), and start again.
		a.release(e)
		a.drop(e, s, true)
	}
}

// gone reports whether a caller's session can no longer carry requests.
func (s *session) gone() bool {
	return s.isDead() || (s.child != nil && waitClosed(s.child.exited, 0))
}

// broken reports whether a caller's session failed for good with err: its child exited
// or its transport closed. The caller's next request starts or resumes another.
func (s *session) broken(err error) bool {
	return s.gone() || errors.Is(err, transport.ErrTransportClosed)
}

// open fills a new entry: the record in the store is resumed when there is one, else a
// session is started (and recorded). Waiters are released when it returns.
func (a *affinity) open(ctx context.Context, e *callerEntry) {
	octx, cancel := context.WithTimeout(a.u.ctx, a.u.cfg.ConnectTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	s, rec, err := a.start(octx, e.key)
	a.mu.Lock()
	e.s, e.rec, e.err = s, rec, err
	e.touched = a.u.owner().now()
	if err != nil {
		a.removeLocked(e)
	}
	a.mu.Unlock()
	close(e.ready)
	if err != nil {
		a.u.log.Warn("starting a caller's MCP session failed", "err", err)
	}
}

// start resumes or starts key's session, returning it and its record's bytes.
func (a *affinity) start(ctx context.Context, key string) (*session, []byte, error) {
	if a.kv != nil {
		if s, raw, ok := a.resumeStored(ctx, key); ok {
			return s, raw, nil
		}
	}
	s, err := a.u.dialCaller(ctx, key, nil)
	if err != nil {
		return nil, nil, a.u.unavailable(connectReason(err)).Wrap(err).NotSent() // the call was not sent: nothing ran
	}
	if a.kv == nil {
		return s, nil, nil
	}
	raw := a.record(s)
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	won, err := a.kv.SetNX(sctx, a.storeKey(key), raw, a.cfg.RecordTTL)
	cancel()
	if err != nil {
		a.u.log.Warn("recording a caller's MCP session failed; it serves this process only", "err", err)
		return s, nil, nil
	}
	if !won {
		// Another replica started one for the caller at the same time: use that one.
		if other, oraw, ok := a.resumeStored(ctx, key); ok {
			a.end(s)
			return other, oraw, nil
		}
	}
	return s, raw, nil
}

// resumeStored resumes the session key's record names, if the store has one.
func (a *affinity) resumeStored(ctx context.Context, key string) (*session, []byte, bool) {
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	raw, ok, err := a.kv.Get(sctx, a.storeKey(key))
	cancel()
	if err != nil {
		a.u.log.Warn("reading a caller's MCP session record failed", "err", err)
		return nil, nil, false
	}
	var rec affinityRecord
	if !ok || json.Unmarshal(raw, &rec) != nil || rec.Session == "" {
		return nil, nil, false
	}
	s, err := a.u.dialCaller(ctx, key, &rec)
	if err != nil {
		return nil, nil, false
	}
	return s, raw, true
}

// record encodes s as its caller's record, used now.
func (a *affinity) record(s *session) []byte {
	raw, _ := json.Marshal(affinityRecord{Session: s.wire.GetSessionId(), Version: s.version, Caps: s.caps,
		Used: a.u.owner().now().UnixMilli()})
	return raw
}

// release ends one request on e: it is no longer in flight, and the store's record is
// refreshed when this process last did so a quarter of the idle timeout ago.
func (a *affinity) release(e *callerEntry) {
	now := a.u.owner().now()
	a.mu.Lock()
	e.inflight--
	e.lastUsed = now
	var s *session
	var old []byte
	if a.kv != nil && e.err == nil && e.rec != nil && now.Sub(e.touched) >= a.cfg.IdleTimeout/4 {
		s, old = e.s, e.rec
		e.touched = now
	}
	a.mu.Unlock()
	if s == nil {
		return
	}
	a.refresh(e, s, old)
}

// refresh writes s's record, used now, over old; a record another replica refreshed
// meanwhile is refreshed in turn, and one naming another session makes this copy stale.
func (a *affinity) refresh(e *callerEntry, s *session, old []byte) {
	ctx, cancel := context.WithTimeout(a.u.ctx, storeTimeout)
	defer cancel()
	key := a.storeKey(e.key)
	raw := a.record(s)
	for range 2 {
		swapped, err := a.kv.CompareAndSwap(ctx, key, old, raw, a.cfg.RecordTTL)
		if err != nil {
			a.u.log.Debug("refreshing a caller's MCP session record failed", "err", err)
			return
		}
		if swapped {
			a.mu.Lock()
			if e.s == s {
				e.rec = raw
			}
			a.mu.Unlock()
			return
		}
		cur, ok, err := a.kv.Get(ctx, key)
		if err != nil {
			return
		}
		var rec affinityRecord
		if !ok || json.Unmarshal(cur, &rec) != nil || rec.Session != s.wire.GetSessionId() {
			break // ended or replaced by another replica
		}
		old = cur
	}
	a.drop(e, s, true)
}

// renew replaces e's session old, which the upstream has forgotten, with a new one and
// records it; it returns the session to retry on.
func (a *affinity) renew(ctx context.Context, e *callerEntry, old *session) (*session, error) {
	e.renewMu.Lock()
	defer e.renewMu.Unlock()
	a.mu.Lock()
	cur, oldRec := e.s, e.rec
	a.mu.Unlock()
	if cur != old {
		return cur, nil // a concurrent request renewed it already
	}
	old.keepUpstream.Store(true) // the upstream has forgotten it: nothing to DELETE
	octx, cancel := context.WithTimeout(a.u.ctx, a.u.cfg.ConnectTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	s, err := a.u.dialCaller(octx, e.key, nil)
	if err != nil {
		return nil, a.u.unavailable(connectReason(err)).Wrap(err).NotSent() // the call was not sent: nothing ran
	}
	var raw []byte
	if a.kv != nil {
		raw = a.record(s)
		sctx, scancel := context.WithTimeout(octx, storeTimeout)
		swapped, err := a.kv.CompareAndSwap(sctx, a.storeKey(e.key), oldRec, raw, a.cfg.RecordTTL)
		scancel()
		if err == nil && !swapped {
			// Another replica replaced it first: resume that one.
			if other, oraw, ok := a.resumeStored(octx, e.key); ok {
				a.end(s)
				s, raw = other, oraw
			} else if err := a.kv.Set(octx, a.storeKey(e.key), raw, a.cfg.RecordTTL); err != nil {
				a.u.log.Warn("recording a caller's MCP session failed; it serves this process only", "err", err)
				raw = nil
			}
		}
	}
	a.mu.Lock()
	e.s, e.rec, e.touched = s, raw, a.u.owner().now()
	a.mu.Unlock()
	a.u.log.Info("a caller's MCP session expired upstream; started a new one")
	a.u.wg.Go(func() { a.u.drain(old) })
	return s, nil
}

// evictLocked drops this process's least recently used idle entry to make room; false
// when every entry is busy. With a store the session lives on (its record stays, and the
// caller's next request resumes it); without, nothing could resume it, so it is ended.
func (a *affinity) evictLocked() bool {
	for el := a.lru.Back(); el != nil; el = el.Prev() {
		e := el.Value.(*callerEntry)
		if e.inflight > 0 || !isClosed(e.ready) {
			continue
		}
		a.removeLocked(e)
		s := e.s
		if a.kv != nil && e.rec != nil {
			s.keepUpstream.Store(true)
		}
		a.u.wg.Go(s.close)
		return true
	}
	return false
}

// drop forgets e's session s in this process (if it is still e's): the next request of
// the caller starts or resumes another, and s is closed once its requests in flight are
// done. keep leaves the upstream session alive for a resumption, else the upstream is
// told it ended.
func (a *affinity) drop(e *callerEntry, s *session, keep bool) {
	a.mu.Lock()
	if e.s == s {
		a.removeLocked(e)
		e.rec = nil // no refresh from a forgotten entry
	}
	a.mu.Unlock()
	if keep {
		s.keepUpstream.Store(true)
	}
	a.u.wg.Go(func() { a.u.drain(s) })
}

func (a *affinity) removeLocked(e *callerEntry) {
	if a.entries[e.key] == e {
		delete(a.entries, e.key)
		a.lru.Remove(e.elem)
	}
}

// end closes a session no record names, telling the upstream.
func (a *affinity) end(s *session) { s.close() }

// janitor ends idle caller sessions every quarter of the idle timeout, and on closing
// closes this process's sessions (leaving recorded ones alive upstream).
func (a *affinity) janitor() {
	period := max(a.cfg.IdleTimeout/4, 10*time.Millisecond)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-a.u.ctx.Done():
			a.closeAll()
			return
		case <-t.C:
			a.sweep()
		}
	}
}

// sweep ends the sessions idle here for the idle timeout. With a store, the record says
// whether another replica used it since: then only this process's client is dropped;
// else the record is removed and the upstream sent DELETE.
func (a *affinity) sweep() {
	now := a.u.owner().now()
	var idle []*callerEntry
	a.mu.Lock()
	for el := a.lru.Back(); el != nil; el = el.Prev() {
		e := el.Value.(*callerEntry)
		if e.inflight == 0 && isClosed(e.ready) && now.Sub(e.lastUsed) >= a.cfg.IdleTimeout {
			a.removeLocked(e)
			idle = append(idle, e)
		}
	}
	a.mu.Unlock()
	for _, e := range idle {
		if a.kv != nil && e.rec != nil && !a.expireRecord(e, now) {
			e.s.keepUpstream.Store(true)
		}
		a.u.wg.Go(e.s.close)
	}
}

// expireRecord reports whether e's idle session should end upstream: its record is gone
// (expired), or no replica used it within the idle timeout and this removed the record.
// A record another replica used lately, or one naming another session (a replacement),
// leaves the session alive: only this process's client is dropped.
func (a *affinity) expireRecord(e *callerEntry, now time.Time) bool {
	ctx, cancel := context.WithTimeout(a.u.ctx, storeTimeout)
	defer cancel()
	key := a.storeKey(e.key)
	raw, ok, err := a.kv.Get(ctx, key)
	if err != nil {
		return false // cannot tell: leave it to the record's TTL
	}
	if !ok {
		return true // expired: nobody can resume it
	}
	var rec affinityRecord
	if json.Unmarshal(raw, &rec) != nil || rec.Session != e.s.wire.GetSessionId() {
		return false
	}
	if now.Sub(time.UnixMilli(rec.Used)) < a.cfg.IdleTimeout {
		return false // another replica used it lately
	}
	removed, err := a.kv.CompareAndSwap(ctx, key, raw, nil, a.cfg.RecordTTL)
	return err == nil && removed
}

// closeAll closes this process's caller sessions, all at once, as the upstream stops.
// Recorded ones stay alive upstream for the other replicas.
func (a *affinity) closeAll() {
	a.mu.Lock()
	entries := make([]*callerEntry, 0, len(a.entries))
	for _, e := range a.entries {
		entries = append(entries, e)
	}
	a.entries = map[string]*callerEntry{}
	a.lru.Init()
	a.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range entries {
		<-e.ready
		a.mu.Lock()
		s, recorded := e.s, a.kv != nil && e.rec != nil
		a.mu.Unlock()
		if s == nil {
			continue
		}
		if recorded {
			s.keepUpstream.Store(true)
		}
		wg.Go(s.close)
	}
	wg.Wait()
}

// held reports how many caller sessions this process holds.
func (a *affinity) held() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.entries)
}

// dialCaller starts a session for the caller key (rec nil: a handshake) or resumes the
// one rec names. A caller's session always negotiates a handshake revision: only such
// servers keep per-session state.
func (u *upstream) dialCaller(ctx context.Context, key string, rec *affinityRecord) (*session, error) {
	s := &session{up: u, slot: -1, caller: key, dead: make(chan struct{}), started: u.owner().now()}
	if rec != nil {
		s.resumeID = rec.Session
	}
	return u.establish(ctx, s, true, rec)
}

// resume takes up the upstream session rec names: the transport carries its id, and the
// version and capabilities are the record's.
func (s *session) resume(rec *affinityRecord) error {
	if err := s.cli.Start(s.up.ctx); err != nil {
		return err
	}
	if s.wire.isHTTP {
		httpWire{s.wire}.SetProtocolVersion(rec.Version)
	}
	s.caps, s.version = rec.Caps, rec.Version
	return nil
}

// keepDelete is a caller session's HTTP transport: the DELETE that closing the mcp-go
// transport sends is answered here, unsent, while the session is to live on upstream.
type keepDelete struct {
	rt http.RoundTripper
	s  *session
}

// RoundTrip implements http.RoundTripper.
func (k keepDelete) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodDelete && k.s.keepUpstream.Load() {
		return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Request: r, Header: http.Header{},
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, nil
	}
	return k.rt.RoundTrip(r)
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the transport.
func (k keepDelete) CloseIdleConnections() {
	if c, ok := k.rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// CallerSessionCount reports how many caller sessions this process holds per upstream
// under session_affinity caller (tests, the status).
func (b *Bridge) CallerSessionCount() map[string]int {
	out := map[string]int{}
	for _, u := range b.ups {
		if u.aff != nil {
			out[u.cfg.Name] = u.aff.held()
		}
	}
	return out
}

// CallerSessions is Bridge.CallerSessionCount.
func (t *Target) CallerSessions() map[string]int { return t.b.CallerSessionCount() }
