package agentlink

import (
	"sync"
	"sync/atomic"

	agentlinkv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/agentlink/v1"
)

// recentTasks is how many finished task ids an agent's connection remembers, so that a
// duplicate or late result or acknowledgement of one is ignored rather than taken for a
// breach of the protocol.
const recentTasks = 4096

// agent is one connected agent.
type agent struct {
	id, session, version, subject string
	desc                          *agentlinkv1.NodeDescriptor
	ops                           map[string]*operatorSpec
	limit                         int
	// anonymous agents serve any operator they advertise; others what their scopes allow.
	anonymous bool
	// trusted agents' tasks get plain blob URLs and one scoped task token (agents.auth).
	trusted bool

	out    chan *agentlinkv1.ConnectResponse // to the sender goroutine
	quit   chan struct{}                     // closed when the connection ends
	kicked chan string                       // a reason to disconnect, from outside the connection

	outstanding atomic.Int32 // reserved task slots

	mu       sync.Mutex
	tasks    map[string]*task // outstanding, by task id; guarded by mu
	finished recent           // guarded by mu
	gone     string           // why the connection ended, once it has; guarded by mu
}

func newAgent(id string, limit int) *agent {
	return &agent{id: id, limit: limit, out: make(chan *agentlinkv1.ConnectResponse, 2*limit+8),
		quit: make(chan struct{}), kicked: make(chan string, 1), tasks: make(map[string]*task)}
}

// reserve takes one task slot if the agent has room.
func (a *agent) reserve() bool {
	for {
		n := a.outstanding.Load()
		if int(n) >= a.limit {
			return false
		}
		if a.outstanding.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release gives a task slot back.
func (a *agent) release() { a.outstanding.Add(-1) }

// kick asks the connection to end with reason (the first reason wins).
func (a *agent) kick(reason string) {
	select {
	case a.kicked <- reason:
	default:
	}
}

// add registers t as outstanding on a, unless the connection has ended.
func (a *agent) add(t *task) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.gone != "" {
		return false
	}
	a.tasks[t.id] = t
	return true
}

// remove forgets t once it has finished, remembering its id so late messages about it are
// ignored.
func (a *agent) remove(t *task) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.tasks[t.id] == t {
		delete(a.tasks, t.id)
		a.finished.add(t.id)
	}
}

// lookup returns the outstanding task id, or nil; known reports whether the agent was
// ever given it (outstanding or recently finished).
func (a *agent) lookup(id string) (t *task, known bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t := a.tasks[id]; t != nil {
		return t, true
	}
	return nil, a.finished.has(id)
}

// end marks the connection ended with reason and returns its outstanding tasks, which the
// caller fails.
func (a *agent) end(reason string) []*task {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.gone == "" {
		a.gone = reason
	}
	out := make([]*task, 0, len(a.tasks))
	for _, t := range a.tasks {
		out = append(out, t)
	}
	return out
}

// recent is a bounded set of task ids, oldest out first.
type recent struct {
	ring [recentTasks]string
	next int
	set  map[string]struct{}
}

func (r *recent) add(id string) {
	if r.set == nil {
		r.set = make(map[string]struct{})
	}
	if old := r.ring[r.next]; old != "" {
		delete(r.set, old)
	}
	r.ring[r.next] = id
	r.set[id] = struct{}{}
	r.next = (r.next + 1) % recentTasks
}

func (r *recent) has(id string) bool {
	_, ok := r.set[id]
	return ok
}
