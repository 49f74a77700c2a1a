package nekte

import "sync"

// hubs are the process-local meeting points of a task's writers and the streams that
// follow it, one per task that has either in this process. They hold no task state (that
// is the store's): only who is listening, so that an event written here reaches the
// listeners here at once. A hub exists while anything holds it.
type hubs struct {
	mu sync.Mutex
	m  map[string]*hub
}

// hub serialises this process's writes to one task with its streams' reads of the store,
// and fans the written events out to the streams.
type hub struct {
	key  string
	refs int // guarded by hubs.mu

	mu   sync.Mutex
	runs int // runs of the task in this process
	subs map[*taskStream]struct{}
}

// acquire returns the hub of the task key, creating it; release it when done.
func (hs *hubs) acquire(key string) *hub {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.m == nil {
		hs.m = make(map[string]*hub)
	}
	h, ok := hs.m[key]
	if !ok {
		h = &hub{key: key, subs: make(map[*taskStream]struct{})}
		hs.m[key] = h
	}
	h.refs++
	return h
}

// release gives back a hub acquire returned.
func (hs *hubs) release(h *hub) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	h.refs--
	if h.refs == 0 {
		delete(hs.m, h.key)
	}
}

// all returns every hub, for waking their streams at shutdown.
func (hs *hubs) all() []*hub {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	out := make([]*hub, 0, len(hs.m))
	for _, h := range hs.m {
		out = append(out, h)
	}
	return out
}

// publish hands events just written to every stream of the hub. h.mu is held.
func (h *hub) publish(events []liveEvent) {
	if len(events) == 0 {
		return
	}
	for s := range h.subs {
		s.enqueue(events)
	}
}

// refreshAll makes every stream of the hub read the store before it waits again, and
// wakes it: a run here ended (events may now come from another process), or the service
// is closing. h.mu is held.
func (h *hub) refreshAll() {
	for s := range h.subs {
		s.poll = true
		s.signal()
	}
}

// setRunning counts a run of the task starting (+1) or ending (-1) in this process.
func (h *hub) setRunning(delta int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.runs += delta
	if h.runs == 0 {
		h.refreshAll()
	}
}
