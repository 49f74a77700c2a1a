package agentlink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
	agentlinkv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/agentlink/v1"
)

// Hub is the registry of connected agents and the dispatcher of their tasks. It lives as
// long as the process: agents stay connected across reloads. A Hub is safe for concurrent
// use.
type Hub struct {
	cfg   Config
	log   *slog.Logger
	now   func() time.Time
	urls  DataURLs
	watch func(p gateway.Principal, end func(error)) (stop func())
	obs   Observer

	mu     sync.RWMutex
	agents map[string]*agent     // by agent id; guarded by mu
	ops    map[string]*operators // by operator id; guarded by mu
	closed bool                  // guarded by mu
	peers  *peering              // other replicas (UsePeers); guarded by mu
	remote *remoteView           // the other replicas' operators (catalog.go); guarded by mu

	lmu       sync.Mutex
	listeners map[uint64]func() // OnChange; guarded by lmu
	nextL     uint64            // guarded by lmu

	gen     atomic.Uint64 // changes whenever the operators offered change
	seq     atomic.Uint64 // task and session counter
	rotate  atomic.Uint32 // breaks ties between equally loaded agents
	started time.Time
}

// operators is one operator id and the agents offering it. The first agent to advertise
// the id fixes its schemas while any agent offers it: an agent advertising it with other
// schemas is refused, so the catalog has one schema per operator.
type operators struct {
	spec   *operatorSpec
	agents []*agent
}

// Options are what a Hub needs beyond its configuration.
type Options struct {
	// Logger receives connection and protocol events; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// DataURLs, when set, turns DataRefs into signed URLs per task and agent; nil passes
	// them untouched.
	DataURLs DataURLs
	// Watch, when set, watches a connected agent's principal: it calls end once (without
	// blocking) when the credential expires or is revoked, and returns the function that
	// stops watching. The server passes its auth.Liveness. Without it, an agent is
	// disconnected when its credential expires (Principal.Expires) and revocation is not
	// followed.
	Watch func(p gateway.Principal, end func(error)) (stop func())
	// Observer, when set, is told of every task's outcome and every gap between an
	// agent's messages (the server passes its metrics).
	Observer Observer
}

// Observer receives the agent link's measurements. Its methods must be quick and safe for
// concurrent use.
type Observer interface {
	// AgentTaskDone is called once per task dispatched to an agent of this hub, with its
	// operator and outcome: OutcomeOK, OutcomeRejected, OutcomeFailed, OutcomeTimeout,
	// OutcomeGone or OutcomeCancelled.
	AgentTaskDone(operator, outcome string)
	// AgentHeartbeatGap is called with the time between two messages of a connected agent,
	// and with the silence that ends a connection.
	AgentHeartbeatGap(d time.Duration)
}

// Outcomes of a dispatched task, as Observer and the dispatch span name them.
const (
	OutcomeOK        = "ok"
	OutcomeRejected  = "rejected"
	OutcomeFailed    = "failed"
	OutcomeTimeout   = "timeout"
	OutcomeGone      = "gone"
	OutcomeCancelled = "cancelled" // the caller gave up, or the task could not be sent
)

// outcomeOf names err's outcome.
func outcomeOf(err error) string {
	if err == nil {
		return OutcomeOK
	}
	switch gateway.AsError(err).Code() {
	case schemas.CodeAgentRejected:
		return OutcomeRejected
	case schemas.CodeAgentTaskFailed:
		return OutcomeFailed
	case schemas.CodeAgentTimeout:
		return OutcomeTimeout
	case schemas.CodeAgentGone:
		return OutcomeGone
	}
	return OutcomeCancelled
}

// nopObserver observes nothing.
type nopObserver struct{}

func (nopObserver) AgentTaskDone(string, string)    {}
func (nopObserver) AgentHeartbeatGap(time.Duration) {}

// New returns a hub for cfg (validated, defaults applied).
func New(cfg Config, opts Options) (*Hub, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Observer == nil {
		opts.Observer = nopObserver{}
	}
	h := &Hub{cfg: cfg.WithDefaults(), log: opts.Logger, now: opts.Now, urls: opts.DataURLs, watch: opts.Watch, obs: opts.Observer,
		agents: make(map[string]*agent), ops: make(map[string]*operators),
		remote: &remoteView{ops: map[string]*remoteOp{}, cached: map[string]*cachedCatalog{}}, listeners: map[uint64]func(){}}
	h.started = h.now()
	return h, nil
}

// Config returns the hub's configuration, defaults applied.
func (h *Hub) Config() Config { return h.cfg }

// Generation changes whenever the set of operators offered changes: by this replica's
// agents, or by those of other replicas sharing its state store (UsePeers).
func (h *Hub) Generation() uint64 { return h.gen.Load() }

// OnChange calls fn whenever the operators offered change (Generation), until the
// returned stop is called. fn is called without the hub's locks held, from the goroutine
// that made the change; it must not block.
func (h *Hub) OnChange(fn func()) (stop func()) {
	h.lmu.Lock()
	defer h.lmu.Unlock()
	h.nextL++
	id := h.nextL
	h.listeners[id] = fn
	return func() {
		h.lmu.Lock()
		defer h.lmu.Unlock()
		delete(h.listeners, id)
	}
}

// changed tells the OnChange listeners the operators offered changed. Called without h.mu.
func (h *Hub) changed() {
	h.lmu.Lock()
	fns := make([]func(), 0, len(h.listeners))
	for _, fn := range h.listeners {
		fns = append(fns, fn)
	}
	h.lmu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// OperatorInfo describes one operator offered by at least one connected agent.
type OperatorInfo struct {
	// ID is the operator's id; Method is the JSON-RPC method (and capability id) that runs it.
	ID, Method string
	// Description is the operator's description.
	Description string
	// Input is the operator's input schema; Output the schema of the result a call returns
	// (the envelope around the operator's output).
	Input, Output json.RawMessage
	// Agents are the ids of the agents offering it, here or on other replicas, sorted.
	Agents []string
	// TypicalMs is the agents' own cost hint, 0 when none gave one.
	TypicalMs int
	// Remote is set when only the agents of other replicas offer it (calls are forwarded).
	Remote bool
}

// Operators returns the operators offered now, sorted by id, and the generation they
// belong to.
func (h *Hub) Operators() ([]OperatorInfo, uint64) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	gen := h.gen.Load()
	out := make([]OperatorInfo, 0, len(h.ops))
	for id, o := range h.ops {
		info := OperatorInfo{ID: id, Method: h.cfg.Namespace + id, Description: o.spec.description,
			Input: o.spec.input, Output: resultSchema(o.spec.output)}
		if o.spec.cost != nil {
			info.TypicalMs = int(o.spec.cost.GetTypicalMs())
		}
		for _, a := range o.agents {
			info.Agents = append(info.Agents, a.id)
		}
		if r := h.remote.ops[id]; r != nil && jsonEqual(r.Input, o.spec.input) && jsonEqual(r.Output, o.spec.output) {
			info.Agents = append(info.Agents, r.Agents...)
		}
		slices.Sort(info.Agents)
		info.Agents = slices.Compact(info.Agents)
		out = append(out, info)
	}
	for id, r := range h.remote.ops {
		if h.ops[id] != nil {
			continue
		}
		out = append(out, OperatorInfo{ID: id, Method: h.cfg.Namespace + id, Description: r.Description, Input: r.Input,
			Output: resultSchema(r.Output), Agents: slices.Clone(r.Agents), TypicalMs: int(r.TypicalMs), Remote: true})
	}
	slices.SortFunc(out, func(a, b OperatorInfo) int { return cmpString(a.ID, b.ID) })
	return out, gen
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// resultSchema is the schema of a call's result: the envelope with the operator's output.
func resultSchema(output json.RawMessage) json.RawMessage {
	out := json.RawMessage(`{}`)
	if len(output) > 0 {
		out = output
	}
	return json.RawMessage(`{"type":"object","required":["task_id","job_id","agent","output"],"properties":{` +
		`"task_id":{"type":"string"},"job_id":{"type":"string"},"agent":{"type":"string"},"output":` + string(out) +
		`,"data_refs":{"type":"array","items":{"type":"object"}},"diagnostics":{"type":"string"},"receipt":{"type":"object"}}}`)
}

// AgentInfo describes one connected agent.
type AgentInfo struct {
	ID, Version, Subject string
	Operators            []string
	Outstanding, Limit   int
}

// Agents returns the connected agents, sorted by id.
func (h *Hub) Agents() []AgentInfo {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]AgentInfo, 0, len(h.agents))
	for _, a := range h.agents {
		out = append(out, AgentInfo{ID: a.id, Version: a.version, Subject: a.subject, Operators: slices.Sorted(mapKeys(a.ops)),
			Outstanding: int(a.outstanding.Load()), Limit: a.limit})
	}
	slices.SortFunc(out, func(a, b AgentInfo) int { return cmpString(a.ID, b.ID) })
	return out
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// errClosed refuses an agent connecting to a hub that is shutting down.
var errClosed = errors.New("the gateway is shutting down")

// register adds a to the hub, or says why it cannot join.
func (h *Hub) register(a *agent) error {
	if err := h.registerLocked(a); err != nil {
		return err
	}
	h.changed()
	return nil
}

func (h *Hub) registerLocked(a *agent) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed:
		return errClosed
	case h.agents[a.id] != nil:
		return fmt.Errorf("agent_id %q is connected already", a.id)
	case len(h.agents) >= h.cfg.MaxAgents:
		return fmt.Errorf("%d agents are connected, the most allowed (agents.max_agents)", h.cfg.MaxAgents)
	}
	for id, spec := range a.ops {
		if o := h.ops[id]; o != nil && !sameSchemas(o.spec, spec) {
			return fmt.Errorf("operator %q is offered already with other schemas (by %s)", id, o.agents[0].id)
		}
	}
	h.agents[a.id] = a
	for id, spec := range a.ops {
		o := h.ops[id]
		if o == nil {
			o = &operators{spec: spec}
			h.ops[id] = o
		}
		o.agents = append(o.agents, a)
	}
	h.gen.Add(1)
	h.pokeLocked()
	return nil
}

func sameSchemas(a, b *operatorSpec) bool {
	return jsonEqual(a.input, b.input) && jsonEqual(a.output, b.output)
}

// jsonEqual compares two JSON texts by value (member order and spacing aside).
func jsonEqual(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ca, _ := json.Marshal(x)
	cb, _ := json.Marshal(y)
	return string(ca) == string(cb)
}

// unregister removes a from the hub; its tasks are failed by the caller.
func (h *Hub) unregister(a *agent) {
	if h.unregisterLocked(a) {
		h.changed()
	}
}

func (h *Hub) unregisterLocked(a *agent) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.agents[a.id] != a {
		return false
	}
	delete(h.agents, a.id)
	for id := range a.ops {
		o := h.ops[id]
		if o == nil {
			continue
		}
		o.agents = slices.DeleteFunc(o.agents, func(x *agent) bool { return x == a })
		if len(o.agents) == 0 {
			delete(h.ops, id)
		}
	}
	h.gen.Add(1)
	h.pokeLocked()
	return true
}

// pick chooses an agent for a task of operator op and reserves one of its task slots: by
// rendezvous hashing of key over the agents offering op when key is set (the same key
// reaches the same agent while it is connected and has room), else the agent with the
// fewest outstanding tasks. It returns the operator's spec too; a nil agent with a non-nil
// spec means every agent offering op is at its limit.
func (h *Hub) pick(op, key string) (*agent, *operatorSpec) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	o := h.ops[op]
	if o == nil {
		return nil, nil
	}
	if key != "" {
		return pickByKey(o.agents, key), o.spec
	}
	n := len(o.agents)
	start := int(h.rotate.Add(1)) % n
	for range n { // a reservation can lose a race; try again with fresh counts
		var best *agent
		for i := range n {
			a := o.agents[(start+i)%n]
			if out := a.outstanding.Load(); int(out) < a.limit && (best == nil || out < best.outstanding.Load()) {
				best = a
			}
		}
		if best == nil {
			return nil, o.spec
		}
		if best.reserve() {
			return best, o.spec
		}
	}
	return nil, o.spec
}

// pickByKey reserves a slot on the agent with the highest rendezvous score for key that
// has room.
func pickByKey(agents []*agent, key string) *agent {
	order := slices.Clone(agents)
	slices.SortFunc(order, func(a, b *agent) int {
		sa, sb := score(key, a.id), score(key, b.id)
		switch {
		case sa > sb:
			return -1
		case sa < sb:
			return 1
		}
		return 0
	})
	for _, a := range order {
		if a.reserve() {
			return a
		}
	}
	return nil
}

func score(key, id string) uint64 {
	f := fnv.New64a()
	_, _ = f.Write([]byte(key))
	_, _ = f.Write([]byte{0})
	_, _ = f.Write([]byte(id))
	return f.Sum64()
}

// Close disconnects every agent (each of their tasks fails with AGENT_GONE) and refuses
// new ones. It returns at once; the connections end as their streams do.
func (h *Hub) Close() error {
	h.mu.Lock()
	wasClosed := h.closed
	h.closed = true
	agents := make([]*agent, 0, len(h.agents))
	for _, a := range h.agents {
		agents = append(agents, a)
	}
	pr := h.peers
	h.mu.Unlock()
	for _, a := range agents {
		a.kick("the gateway is shutting down")
	}
	if pr != nil && !wasClosed {
		close(pr.stop) // the registry loop drops this replica's entries
		<-pr.done
		if c, ok := pr.Client.(interface{ Close() error }); ok {
			return c.Close()
		}
	}
	return nil
}

// newSession returns a fresh connection id.
func (h *Hub) newSession() string {
	return fmt.Sprintf("s%x-%d", h.started.UnixNano(), h.seq.Add(1))
}

// descriptorSummary is what the log says about a descriptor.
func descriptorSummary(d *agentlinkv1.NodeDescriptor) []any {
	return []any{"agent", d.GetAgentId(), "arch", d.GetArch(), "os", d.GetOs(), "cpu_cores", d.GetCpuCores(),
		"operators", len(d.GetOperators())}
}

// Drain waits until no task is outstanding or ctx ends, then closes the hub (Close): the
// tasks running when the gateway starts draining may finish first.
func (h *Hub) Drain(ctx context.Context) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for h.outstanding() > 0 {
		select {
		case <-ctx.Done():
			return h.Close()
		case <-tick.C:
		}
	}
	return h.Close()
}

// outstanding counts the tasks outstanding on every agent.
func (h *Hub) outstanding() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	for _, a := range h.agents {
		n += int(a.outstanding.Load())
	}
	return n
}

// leastLoaded returns agents ordered by outstanding tasks, fewest first (ties by id).
func leastLoaded(agents []*agent) []*agent {
	out := slices.Clone(agents)
	slices.SortFunc(out, func(a, b *agent) int {
		if d := a.outstanding.Load() - b.outstanding.Load(); d != 0 {
			return int(d)
		}
		return cmpString(a.id, b.id)
	})
	return out
}
