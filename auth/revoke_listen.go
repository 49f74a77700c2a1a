package auth

// Listeners of the revocation list are told when it changes, so that connections
// authenticated before a revocation (a WebSocket, an event stream, an MCP session) can be
// re-checked at once instead of at their next call. They are called by the list's
// follower goroutine, one after another and with no lock held: at once for a change
// made on this replica, within the refresh (or at once, with a bus) for one made on
// another.

// OnChange calls fn after every change of the list this replica sees; stop ends that.
// fn runs on the list's follower goroutine: it must return quickly (it delays the next
// refresh) and must not change the list. A change that only removes entries is reported
// too; a listener re-checks what it holds.
func (r *Revocations) OnChange(fn func()) (stop func()) {
	key := &fn
	r.listenMu.Lock()
	if r.listeners == nil {
		r.listeners = make(map[*func()]struct{})
	}
	r.listeners[key] = struct{}{}
	r.listenMu.Unlock()
	return func() {
		r.listenMu.Lock()
		delete(r.listeners, key)
		r.listenMu.Unlock()
	}
}

// wake asks the follower to tell the listeners of a change made here; it never blocks.
func (r *Revocations) wake() {
	select {
	case r.changed <- struct{}{}:
	default: // a wake is pending already: it covers this change too
	}
}

// notify calls every listener; the follower runs it.
func (r *Revocations) notify() {
	r.listenMu.Lock()
	fns := make([]func(), 0, len(r.listeners))
	for fn := range r.listeners {
		fns = append(fns, *fn)
	}
	r.listenMu.Unlock()
	for _, fn := range fns {
		fn()
	}
}
