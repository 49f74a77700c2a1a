package auth

import (
	"errors"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// Liveness re-checks the principals of connections that outlive the request that
// authenticated them — a WebSocket, an event stream, an MCP session's stream — so that
// they stop when a fresh request with the same credential would be refused: when the
// credential expires (gateway.Principal.Expires) and when its jti or its subject is
// revoked. Each such connection holds a Watch: a cheap check before each call on it
// (Watch.Principal), a timer at the credential's expiry (time.AfterFunc: no goroutine
// while it waits), and one subscription to the revocation list for the whole process,
// which re-checks every watch when the list changes — at once for a revocation made on
// this replica, within auth.revocation.refresh for one made on another.
//
// A nil *Liveness still checks expiry (with time.Now) and revokes nothing.
type Liveness struct {
	rev *Revocations
	now func() time.Time

	mu      sync.Mutex
	watches map[*Watch]struct{}
	stop    func() // ends the subscription to rev
}

// NewLiveness returns the liveness of principals checked against rev (nil: nothing is
// revoked) and the clock now (nil: time.Now). It subscribes to rev's changes until Close.
func NewLiveness(rev *Revocations, now func() time.Time) *Liveness {
	if now == nil {
		now = time.Now
	}
	l := &Liveness{rev: rev, now: now, watches: make(map[*Watch]struct{})}
	if rev != nil {
		l.stop = rev.OnChange(l.sweep)
	}
	return l
}

// Close ends the subscription to the revocation list; the watches keep their expiry
// timers. It is safe to call more than once.
func (l *Liveness) Close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	stop := l.stop
	l.stop = nil
	l.mu.Unlock()
	if stop != nil {
		stop()
	}
}

func (l *Liveness) clock() time.Time {
	if l == nil {
		return time.Now()
	}
	return l.now()
}

// Check returns nil while p may still call, else the AUTHENTICATION_FAILED (4001) error of
// the reason it may not: ReasonExpired once p.Expires has passed, ReasonRevoked once its
// jti or its subject is revoked. It costs a clock read and the revocation list's lock-free
// lookup.
func (l *Liveness) Check(p gateway.Principal) error {
	if !p.Expires.IsZero() && !l.clock().Before(p.Expires) {
		return refuse(ReasonExpired)
	}
	if l != nil && l.rev.Revoked(p) {
		return refuse(ReasonRevoked)
	}
	return nil
}

// Watch starts watching p for a connection: end is called once, with the Check error,
// when p expires or is revoked — from a timer's goroutine, the revocation list's follower,
// or the goroutine of a Watch.End call (or Watch's own, before it returns, when p is dead
// already). end must not block. Stop the watch when the connection
// ends.
func (l *Liveness) Watch(p gateway.Principal, end func(error)) *Watch {
	w := &Watch{l: l, end: end, p: p}
	if l != nil {
		l.mu.Lock()
		l.watches[w] = struct{}{}
		l.mu.Unlock()
	}
	if err := l.Check(p); err != nil {
		w.kill(err)
		return w
	}
	w.mu.Lock()
	w.armLocked()
	w.mu.Unlock()
	return w
}

// sweep re-checks every watch after the revocation list changed and ends those revoked.
func (l *Liveness) sweep() {
	var dead []*Watch
	l.mu.Lock()
	for w := range l.watches {
		if l.rev.Revoked(w.principal()) {
			dead = append(dead, w)
		}
	}
	l.mu.Unlock()
	for _, w := range dead {
		w.kill(refuse(ReasonRevoked))
	}
}

// Watching returns how many watches are live (for tests and metrics).
func (l *Liveness) Watching() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.watches)
}

// ErrWatchStopped is what Watch.Principal returns once the watch was stopped.
var ErrWatchStopped = errors.New("the connection's credential is no longer watched")

// Watch is the credential of one long-lived connection (Liveness.Watch).
type Watch struct {
	l   *Liveness
	end func(error)

	mu    sync.Mutex
	p     gateway.Principal
	timer *time.Timer // at p.Expires; nil when p does not expire
	dead  error       // why the watch ended (its Check error, or ErrWatchStopped)
}

func (w *Watch) principal() gateway.Principal {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.p
}

// Principal is the check before each call on the connection: the current principal, or
// the 4001 error saying why it may no longer call. No call may run, and no hop token be
// minted, on an error: the connection answers the call with it and then ends the watch
// (End), unless it has ended already.
func (w *Watch) Principal() (gateway.Principal, error) {
	w.mu.Lock()
	p, dead := w.p, w.dead
	w.mu.Unlock()
	if dead != nil {
		return gateway.Principal{}, dead
	}
	if err := w.l.Check(p); err != nil {
		return gateway.Principal{}, err
	}
	return p, nil
}

// End ends the watch with err, a Principal error, calling end unless it has ended already.
func (w *Watch) End(err error) { w.kill(err) }

// Renew replaces the watched principal with p, a credential the connection presented
// since and that authenticated: it must name the same subject of the same issuer (else
// ReasonOtherSubject, and the old principal stays), and be live itself. Its scopes, tier
// and expiry replace the old ones; the expiry timer is re-armed. A watch that has ended
// cannot be renewed.
func (w *Watch) Renew(p gateway.Principal) error {
	if err := w.l.Check(p); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.dead != nil:
		return w.dead
	case p.Subject != w.p.Subject || p.Anonymous != w.p.Anonymous || issuerOf(p) != issuerOf(w.p):
		return refuse(ReasonOtherSubject)
	}
	w.p = p
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	w.armLocked()
	return nil
}

// issuerOf is the iss claim of a token's principal, "" for other credentials.
func issuerOf(p gateway.Principal) string {
	iss, _ := p.Claims[claimIss].(string)
	return iss
}

// Expires returns when the watched credential expires (the zero time: never).
func (w *Watch) Expires() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.p.Expires
}

// Stop ends the watch without calling end: the connection is over.
func (w *Watch) Stop() { w.finish(ErrWatchStopped) }

// armLocked sets the timer at the principal's expiry; w.mu is held.
func (w *Watch) armLocked() {
	if w.p.Expires.IsZero() || w.dead != nil {
		return
	}
	w.timer = time.AfterFunc(max(w.p.Expires.Sub(w.l.clock()), 0), w.expiryTimer)
}

// expiryTimer ends the watch once its principal has expired by the Liveness clock; fired
// early (a clock that is not the wall clock), it re-arms for what is left.
func (w *Watch) expiryTimer() {
	w.mu.Lock()
	if w.dead != nil {
		w.mu.Unlock()
		return
	}
	if left := w.p.Expires.Sub(w.l.clock()); left > 0 {
		w.timer.Reset(left)
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	w.kill(refuse(ReasonExpired))
}

// kill ends the watch with err and tells the connection, once.
func (w *Watch) kill(err error) {
	if w.finish(err) {
		w.end(err)
	}
}

// finish ends the watch with err unless it has ended; it reports whether it did.
func (w *Watch) finish(err error) bool {
	w.mu.Lock()
	if w.dead != nil {
		w.mu.Unlock()
		return false
	}
	w.dead = err
	if w.timer != nil {
		w.timer.Stop()
	}
	w.mu.Unlock()
	if w.l != nil {
		w.l.mu.Lock()
		delete(w.l.watches, w)
		w.l.mu.Unlock()
	}
	return true
}
