package mcpbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
)

// Bridge holds every upstream MCP server and their aggregated catalog. It is safe for
// concurrent use.
type Bridge struct {
	log         *slog.Logger
	now         func() time.Time
	sampling    SamplingHandler
	elicitation ElicitationHandler
	// sessionStarted is told of every session started (WithSessionStarted); nil: no one.
	sessionStarted func(upstream string)
	// store keeps the records of callers' sessions (WithStore, affinity.go); nil: none.
	store state.KV

	ctx    context.Context
	cancel context.CancelFunc
	ups    []*upstream
	// carry is the bridge of the previous configuration whose unchanged upstreams this one
	// shares (CarryOver, shared.go); nil: none.
	carry *Bridge

	rebuildMu sync.Mutex
	cat       atomic.Pointer[Catalog]
	routes    atomic.Pointer[routes]
	reported  map[string]bool // collisions already logged

	listenMu  sync.Mutex
	listeners map[int]func(Event)
	nextID    int
	events    chan Event
	emitMu    sync.RWMutex
	closed    bool

	readCacheCfg ReadCacheConfig
	reads        *readCache // nil: off (readcache.go)

	loaded    chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// EventKind says what an Event reports.
type EventKind int

// Event kinds.
const (
	// EventCatalogChanged: the aggregated catalog changed (Delta says how): an upstream's
	// list changed, an upstream went down or came back, or names were re-resolved.
	EventCatalogChanged EventKind = iota + 1
	// EventResourceUpdated: an upstream sent notifications/resources/updated for URI.
	EventResourceUpdated
)

// Event is a change reported to the listeners registered with OnEvent.
type Event struct {
	Kind     EventKind
	Upstream string // EventResourceUpdated: the upstream that sent it
	URI      string // EventResourceUpdated
	Delta    Delta  // EventCatalogChanged
	Catalog  *Catalog
}

// eventBuffer bounds the events waiting for slow listeners.
const eventBuffer = 1024

// New starts a bridge to the upstreams in cfgs: each connects and loads its catalog in
// the background, and reconnects whenever it is lost, until Close.
func New(cfgs []Config, log *slog.Logger, now func() time.Time, opts ...Option) (*Bridge, error) {
	if err := ValidateAll(cfgs); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Bridge{log: log, now: now, ctx: ctx, cancel: cancel, reported: map[string]bool{},
		listeners: map[int]func(Event){}, events: make(chan Event, eventBuffer), loaded: make(chan struct{})}
	for _, o := range opts {
		o(b)
	}
	b.reads = newReadCache(b.readCacheCfg, now)
	for _, c := range cfgs {
		b.ups = append(b.ups, b.upstreamFor(c.withDefaults()))
	}
	b.rebuild()
	b.wg.Go(b.dispatch)
	b.wg.Go(b.waitLoaded)
	for _, u := range b.ups {
		u.start()
	}
	return b, nil
}

// Close stops every upstream: children are stopped and reaped, HTTP sessions deleted,
// and no goroutine is left. It is idempotent.
func (b *Bridge) Close() error {
	b.closeOnce.Do(func() {
		b.cancel()
		b.leaveUpstreams() // stops those no other bridge shares (shared.go)
		b.emitMu.Lock()
		b.closed = true
		close(b.events)
		b.emitMu.Unlock()
		b.wg.Wait()
	})
	return nil
}

// Loaded is closed once every upstream's catalog has loaded once.
func (b *Bridge) Loaded() <-chan struct{} { return b.loaded }

func (b *Bridge) waitLoaded() {
	for _, u := range b.ups {
		select {
		case <-u.loaded:
		case <-b.ctx.Done():
			return
		}
	}
	close(b.loaded)
}

// Catalog returns the current catalog snapshot.
func (b *Bridge) Catalog() *Catalog { return b.cat.Load() }

// Status returns the state of each upstream, in configuration order.
func (b *Bridge) Status() []UpstreamStatus {
	out := make([]UpstreamStatus, 0, len(b.ups))
	for _, u := range b.ups {
		out = append(out, u.status())
	}
	return out
}

// Connected returns the live upstream sessions by transport ("stdio", "sse", "http").
func (b *Bridge) Connected() map[string]int {
	out := make(map[string]int, 3)
	for _, u := range b.ups {
		out[u.cfg.transportName()] += u.status().Live
	}
	return out
}

// Ready returns nil when every upstream has a live session and a loaded catalog and no
// names collide; otherwise an error naming each problem.
func (b *Bridge) Ready(context.Context) error {
	var errs []error
	for _, u := range b.ups {
		st := u.status()
		switch {
		case st.Live == 0:
			errs = append(errs, fmt.Errorf("mcp upstream %q: %s", st.Name, st.Reason))
		case !u.isLoaded():
			errs = append(errs, fmt.Errorf("mcp upstream %q: catalog not loaded yet", st.Name))
		}
	}
	for _, c := range b.Catalog().Collisions {
		errs = append(errs, collisionError(c))
	}
	return errors.Join(errs...)
}

func collisionError(c Collision) error {
	return fmt.Errorf("mcp %s name %q is exposed by upstreams %s: every one is unavailable until names.mode or names.prefix tells them apart",
		strings.ReplaceAll(c.Kind, "_", " "), c.Name, strings.Join(c.Upstreams, " and "))
}

// OnEvent registers fn for catalog changes and resource updates and returns a function
// that removes it. Events are delivered in order from one goroutine; fn must return
// promptly.
func (b *Bridge) OnEvent(fn func(Event)) (remove func()) {
	b.listenMu.Lock()
	defer b.listenMu.Unlock()
	id := b.nextID
	b.nextID++
	b.listeners[id] = fn
	return func() {
		b.listenMu.Lock()
		delete(b.listeners, id)
		b.listenMu.Unlock()
	}
}

func (b *Bridge) emit(e Event) {
	switch e.Kind { // the read cache hears of changes first (readcache.go)
	case EventResourceUpdated:
		b.resourceUpdated(e.Upstream, e.URI)
	case EventCatalogChanged:
		b.resourcesChanged(e.Delta)
	}
	b.emitMu.RLock()
	defer b.emitMu.RUnlock()
	if b.closed {
		return // a notification read while closing: nobody is listening
	}
	select {
	case b.events <- e:
	default:
		b.log.Warn("mcp event dropped: listeners are not keeping up", "kind", e.Kind)
	}
}

func (b *Bridge) dispatch() {
	for e := range b.events {
		b.listenMu.Lock()
		fns := make([]func(Event), 0, len(b.listeners))
		for _, fn := range b.listeners {
			fns = append(fns, fn)
		}
		b.listenMu.Unlock()
		for _, fn := range fns {
			fn(e)
		}
	}
}

// rebuild recomputes the aggregated catalog and reports what changed.
func (b *Bridge) rebuild() {
	b.rebuildMu.Lock()
	defer b.rebuildMu.Unlock()
	cat, rt := buildCatalog(b.ups)
	prev := b.cat.Load()
	d := diff(prev, cat)
	if prev != nil {
		if d.Empty() && len(prev.Collisions) == len(cat.Collisions) {
			b.routes.Store(rt) // same entries; the routes may point at new sessions' upstream state
			return
		}
		cat.Generation = prev.Generation + 1
	}
	for _, c := range cat.Collisions {
		key := c.Kind + "\x00" + c.Name + "\x00" + strings.Join(c.Upstreams, ",")
		if !b.reported[key] {
			b.reported[key] = true
			b.log.Error("MCP name collision", "err", collisionError(c))
		}
	}
	b.cat.Store(cat)
	b.routes.Store(rt)
	if prev != nil && !d.Empty() {
		b.emit(Event{Kind: EventCatalogChanged, Delta: d, Catalog: cat})
	}
}

// lookup finds a tool's or prompt's route.
func lookup(m map[string]*route, name, what string) (*route, error) {
	r, ok := m[name]
	if !ok {
		return nil, gateway.NewError(schemas.CodeCapabilityNotFound).With(what, name)
	}
	if r.up == nil {
		return nil, gateway.NewError(schemas.CodeUnavailable).With(what, name).With("reason", r.entry.Reason)
	}
	return r, nil
}

// CallTool calls a tool by its exposed name with args (a JSON object, or empty) and
// returns the upstream's CallToolResult JSON as sent — including results with isError
// set, which are the tool's own failures. When ctx carries WithProgress, progress is
// requested and relayed. Errors are *gateway.Error: CAPABILITY_NOT_FOUND for an unknown
// tool, INVALID_PARAMS for args that are not an object, UNAVAILABLE (data upstream,
// reason) when the upstream is down or its session died during the call, OVERLOADED
// past the concurrency cap, CANCELLED or DEADLINE_EXCEEDED, or the upstream's JSON-RPC
// error passed through.
func (b *Bridge) CallTool(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	r, err := lookup(b.routes.Load().tools, name, "tool")
	if err != nil {
		return nil, err
	}
	args, err = objectParams(args)
	if err != nil {
		return nil, err
	}
	progress := progressFrom(ctx)
	start := time.Now()
	defer func() { gateway.ObserverFrom(ctx).ToolCalled(name, r.up.cfg.Name, time.Since(start)) }()
	if r.asTask(ctx) { // the upstream runs it as a task of its own (tasks.go)
		return b.callToolTask(ctx, r, args)
	}
	x, err := r.up.do(ctx, func(ctx context.Context, s *session) error {
		var token string
		if progress != nil {
			token = r.up.newToken()
			r.up.progress.Store(token, progress)
			defer r.up.progress.Delete(token)
		}
		if s.lean != nil && !r.paramHeaders {
			c := leanCall{name: r.original, args: args, token: token, logLevel: logLevelFor(ctx, s)}
			if err := s.callToolLean(ctx, s.lean, &c, exchangeFrom(ctx)); !errors.Is(err, errLeanFallback) {
				return err
			}
		}
		req := mcp.CallToolRequest{}
		req.Params.Name = r.original
		if args != nil {
			req.Params.Arguments = args
		}
		if token != "" {
			req.Params.Meta = &mcp.Meta{ProgressToken: token}
		}
		askLogLevel(ctx, s, &req.Params.Meta)
		_, err := s.cli.CallTool(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return x.result, nil
}

// objectParams checks that params are a JSON object (or absent, or null: nil).
func objectParams(p json.RawMessage) (json.RawMessage, error) {
	t := strings.TrimSpace(string(p))
	switch {
	case t == "" || t == "null":
		return nil, nil
	case t[0] == '{' && json.Valid(p):
		return p, nil
	default:
		return nil, gateway.NewError(schemas.CodeInvalidParams).With("reason", "arguments must be a JSON object")
	}
}

// ReadResource reads a resource by URI from the upstream that lists it, or whose resource
// template's literal prefix matches it longest, or the only upstream offering resources;
// it returns the upstream's ReadResourceResult JSON.
func (b *Bridge) ReadResource(ctx context.Context, uri string) (json.RawMessage, error) {
	u, err := b.resourceUpstream(uri)
	if err != nil {
		return nil, err
	}
	return b.readFrom(ctx, u, uri)
}

// readCached is ReadResource for caller p through the read cache (readcache.go).
func (b *Bridge) readCached(ctx context.Context, uri string, p *gateway.Principal) (json.RawMessage, error) {
	u, err := b.resourceUpstream(uri)
	if err != nil {
		return nil, err
	}
	if res, ok := b.reads.get(u.cfg.Name, uri, p); ok {
		return res, nil
	}
	res, err := b.readFrom(ctx, u, uri)
	if err == nil {
		b.reads.put(u.cfg.Name, uri, p, res)
	}
	return res, err
}

// readFrom reads uri from upstream u.
func (b *Bridge) readFrom(ctx context.Context, u *upstream, uri string) (json.RawMessage, error) {
	x, err := u.do(ctx, func(ctx context.Context, s *session) error {
		req := mcp.ReadResourceRequest{}
		req.Params.URI = uri
		_, err := s.cli.ReadResource(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return x.result, nil
}

// resourceUpstream finds the upstream a URI belongs to.
func (b *Bridge) resourceUpstream(uri string) (*upstream, error) {
	rt := b.routes.Load()
	if r, ok := rt.resources[uri]; ok {
		if r.up == nil {
			return nil, gateway.NewError(schemas.CodeUnavailable).With("uri", uri).With("reason", r.entry.Reason)
		}
		return r.up, nil
	}
	for _, r := range rt.templates {
		if r.up != nil && r.prefix != "" && strings.HasPrefix(uri, r.prefix) {
			return r.up, nil
		}
	}
	var only *upstream
	for _, u := range b.ups {
		if sc := u.cat.Load(); sc != nil && (len(sc.resources) > 0 || len(sc.templates) > 0) {
			if only != nil {
				only = nil
				break
			}
			only = u
		}
	}
	if only == nil {
		return nil, gateway.NewError(schemas.CodeCapabilityNotFound).With("uri", uri)
	}
	return only, nil
}

// GetPrompt renders a prompt by its exposed name with args (a JSON object of strings,
// or empty) and returns the upstream's GetPromptResult JSON.
func (b *Bridge) GetPrompt(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	r, err := lookup(b.routes.Load().prompts, name, "prompt")
	if err != nil {
		return nil, err
	}
	var m map[string]string
	if p, err := objectParams(args); err != nil {
		return nil, err
	} else if p != nil && json.Unmarshal(p, &m) != nil {
		return nil, gateway.NewError(schemas.CodeInvalidParams).With("reason", "prompt arguments must be strings")
	}
	x, err := r.up.do(ctx, func(ctx context.Context, s *session) error {
		req := mcp.GetPromptRequest{}
		req.Params.Name, req.Params.Arguments = r.original, m
		_, err := s.cli.GetPrompt(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return x.result, nil
}

// Subscribe subscribes to updates of a resource; each notifications/resources/updated
// the upstream sends for it becomes an EventResourceUpdated. Subscriptions are counted:
// the upstream is asked once, and again after each reconnection. An upstream that does
// not advertise resources.subscribe is not asked: the call fails with METHOD_NOT_FOUND.
func (b *Bridge) Subscribe(ctx context.Context, uri string) error {
	u, err := b.resourceUpstream(uri)
	if err != nil {
		return err
	}
	s := u.pick()
	if s == nil {
		return u.unavailable("")
	}
	if c := s.caps.Resources; c == nil || !c.Subscribe {
		return gateway.Errorf(schemas.CodeMethodNotFound, "The upstream does not support resource subscriptions").With("upstream", u.cfg.Name)
	}
	u.mu.Lock()
	u.subs[uri]++
	first := u.subs[uri] == 1
	u.mu.Unlock()
	if !first {
		return nil
	}
	if err := u.applySubscription(ctx, uri, true); err != nil {
		u.mu.Lock()
		if u.subs[uri]--; u.subs[uri] <= 0 {
			delete(u.subs, uri)
		}
		u.mu.Unlock()
		return err
	}
	return nil
}

// Unsubscribe drops one subscription made with Subscribe; the upstream is told when the
// last one goes.
func (b *Bridge) Unsubscribe(ctx context.Context, uri string) error {
	u, err := b.resourceUpstream(uri)
	if err != nil {
		return err
	}
	u.mu.Lock()
	n, ok := u.subs[uri]
	if ok {
		if n--; n <= 0 {
			delete(u.subs, uri)
		} else {
			u.subs[uri] = n
		}
	}
	u.mu.Unlock()
	if !ok || n > 0 {
		return nil
	}
	return u.applySubscription(ctx, uri, false)
}

// applySubscription tells every live session of u about a change of subscription: the
// resources/(un)subscribe RPC, or a new subscriptions/listen filter on 2026-07-28. A
// subscription is the bridge's, not one caller's: no hop credential goes with it.
func (u *upstream) applySubscription(ctx context.Context, uri string, on bool) error {
	ctx = gateway.WithHopToken(ctx, "")
	var errs []error
	for i := range u.slots {
		s := u.slots[i].Load()
		if s == nil || s.isDead() {
			continue
		}
		if mcp.IsModernProtocol(s.version) {
			s.listen()
			continue
		}
		if on {
			errs = append(errs, u.subscribeOn(s, uri))
			continue
		}
		_, err := u.do(ctx, func(ctx context.Context, s *session) error {
			req := mcp.UnsubscribeRequest{}
			req.Params.URI = uri
			return s.cli.Unsubscribe(ctx, req) //nolint:staticcheck // the RPC, for servers before 2026-07-28 (listen() serves later ones)
		})
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// subscribeOn sends resources/subscribe for uri on s.
func (u *upstream) subscribeOn(s *session, uri string) error {
	ctx, cancel := context.WithTimeout(u.ctx, u.cfg.RequestTimeout)
	defer cancel()
	x := &exchange{}
	req := mcp.SubscribeRequest{}
	req.Params.URI = uri
	if err := s.cli.Subscribe(withExchange(ctx, x), req); err != nil { //nolint:staticcheck // the RPC, for servers before 2026-07-28
		return u.callError(ctx, ctx, s, err, x)
	}
	return nil
}
