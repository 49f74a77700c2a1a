package a2aface

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/codecs/a2a"
	"github.com/gatehouse-dev/gatehouse/faces"
	rn "github.com/gatehouse-dev/gatehouse/routing/nekte"
)

// Headers of a push delivery beside the ones the specification names (Authorization from
// the config's authentication, Content-Type).
const (
	// SignatureHeader carries the JWT the gateway's key ring signed for the delivery: iss,
	// aud (the webhook URL), iat, exp, jti (the delivery's id, the same on each attempt),
	// task_id, config_id and body_sha256 (base64url SHA-256 of the body). A receiver
	// verifies it with the gateway's JWKS (/.well-known/jwks.json).
	SignatureHeader = "X-Gatehouse-Signature"
	// TokenHeader carries the config's token, as the A2A SDKs send it.
	TokenHeader = "X-A2A-Notification-Token" //nolint:gosec // a header's name
	// claimTaskID is the delivery JWT's claim naming the task.
	claimTaskID = "task_id"
	// contentType10 is the media type of a 1.0 payload (a StreamResponse).
	contentType10 = "application/a2a+json"
	// maxReceiverBody is what is read of a receiver's answer, to reuse nothing but be
	// polite to it.
	maxReceiverBody = 4 << 10
)

// Outcomes of a delivery, as PushOutcome hears them.
const (
	PushDelivered = "delivered" // a 2xx answer
	PushFailed    = "failed"    // refused, or out of attempts
	PushDropped   = "dropped"   // the queue was full (or the process shutting down)
	PushRetried   = "retried"   // one more attempt scheduled
)

// pusher delivers push notifications: a bounded queue of deliveries (a2a.push.max_queue,
// retries included) served by a2a.push.workers goroutines, retries scheduled on timers
// with exponential backoff, and one goroutine per watched task following its NEKTE
// stream. Close stops them all.
type pusher struct {
	f      *Face
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	queue  chan *delivery
	client *http.Client

	pending atomic.Int64 // deliveries queued or waiting for a retry

	mu       sync.Mutex
	closed   bool
	timers   map[*time.Timer]struct{}
	watching map[string]struct{} // task ids followed by this process
}

// delivery is one notification to one webhook.
type delivery struct {
	id       string
	taskID   string
	configID string
	url      *url.URL
	guard    *guard
	limits   PushConfig
	body     []byte
	ctype    string
	auth     string // the Authorization value, "" for none
	token    string
	attempt  int
}

func newPusher(f *Face) *pusher {
	p := &pusher{f: f, timers: map[*time.Timer]struct{}{}, watching: map[string]struct{}{}}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.client = &http.Client{
		Transport: &http.Transport{
			Proxy: nil, // a proxy would resolve the name itself, past the guard
			DialContext: dialGuarded(func() net.Dialer {
				return net.Dialer{Timeout: DefaultPushTimeout, KeepAlive: -1}
			}),
			DisableKeepAlives:      true, // a connection is checked by the guard of its delivery
			TLSHandshakeTimeout:    DefaultPushTimeout,
			MaxResponseHeaderBytes: 16 << 10,
			ForceAttemptHTTP2:      true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return p
}

// start starts the workers, once, with the configuration's limits. It takes no lock: the
// watchers call it holding mu.
func (p *pusher) start(c *PushConfig) bool {
	p.once.Do(func() {
		if p.ctx.Err() != nil { // closed
			return
		}
		p.queue = make(chan *delivery, c.MaxQueue)
		for range c.Workers {
			p.wg.Go(p.work)
		}
	})
	return p.queue != nil
}

// close stops the workers, the watchers and the retry timers, and waits for them;
// deliveries still queued are dropped.
func (p *pusher) close() {
	p.mu.Lock()
	p.closed = true
	for t := range p.timers {
		if t.Stop() {
			p.wg.Done()
		}
	}
	clear(p.timers)
	p.mu.Unlock()
	p.cancel()
	p.once.Do(func() {}) // no workers start after this
	p.wg.Wait()
}

func (p *pusher) outcome(o string) {
	if p.f.pushOutcome != nil {
		p.f.pushOutcome(o)
	}
}

// enqueue queues d unless the queue is full: then it is dropped, counted and logged,
// never waited for. retry says d already counts as pending.
func (p *pusher) enqueue(d *delivery, retry bool) {
	if !retry && p.pending.Add(1) > int64(d.limits.MaxQueue) {
		p.pending.Add(-1)
		p.drop(d, "the queue is full (a2a.push.max_queue)")
		return
	}
	select {
	case p.queue <- d:
	default:
		p.pending.Add(-1)
		p.drop(d, "the queue is full (a2a.push.max_queue)")
	}
}

func (p *pusher) drop(d *delivery, why string) {
	p.outcome(PushDropped)
	p.f.log.Warn("a2a: push notification dropped", claimTaskID, d.taskID, "config_id", d.configID, "reason", why)
}

func (p *pusher) work() {
	for {
		select {
		case <-p.ctx.Done():
			return
		case d := <-p.queue:
			p.attempt(d)
		}
	}
}

// attempt makes one attempt of d, then schedules the next one or settles it.
func (p *pusher) attempt(d *delivery) {
	d.attempt++
	retry, err := p.post(d)
	switch {
	case err == nil:
		p.pending.Add(-1)
		p.outcome(PushDelivered)
		return
	case !retry || d.attempt >= d.limits.MaxAttempts:
		p.pending.Add(-1)
		p.outcome(PushFailed)
		p.f.log.Warn("a2a: push notification failed", claimTaskID, d.taskID, "config_id", d.configID,
			"attempts", d.attempt, "err", err)
		return
	}
	p.outcome(PushRetried)
	wait := retryWait(d.limits.Backoff, d.limits.MaxBackoff, d.attempt)
	wait = wait/2 + time.Duration(mrand.Int64N(int64(wait/2)+1)) //nolint:gosec // jitter, not a secret
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		p.pending.Add(-1)
		p.drop(d, "shutting down")
		return
	}
	p.wg.Add(1)
	var t *time.Timer
	t = time.AfterFunc(wait, func() {
		defer p.wg.Done()
		p.mu.Lock()
		delete(p.timers, t)
		p.mu.Unlock()
		p.enqueue(d, true)
	})
	p.timers[t] = struct{}{}
}

// retryWait is the wait after attempt n (1 for the first): backoff doubled n-1 times, at
// most ceiling, never negative.
func retryWait(backoff, ceiling time.Duration, n int) time.Duration {
	wait := max(backoff, 0)
	for i := 1; i < n && wait < ceiling; i++ {
		if wait > ceiling/2 {
			return ceiling
		}
		wait *= 2
	}
	return max(min(wait, ceiling), 0)
}

// errStatus is the error of an answer that is not 2xx.
type errStatus int

func (e errStatus) Error() string { return "the webhook answered HTTP " + http.StatusText(int(e)) }

// post sends d once; retry says a failure may pass on another attempt (a network error,
// a timeout, 408, 425, 429 or 5xx).
func (p *pusher) post(d *delivery) (retry bool, err error) {
	if _, err := d.guard.checkURL(d.url.String()); err != nil {
		return false, err
	}
	ring := p.f.ring()
	if ring == nil {
		return false, errors.New("no key ring signs deliveries (auth.keyring)")
	}
	sum := sha256.Sum256(d.body)
	now := p.f.now()
	ttl := min(d.limits.TokenTTL, ring.MaxTokenTTL())
	jwt, err := ring.Sign(map[string]any{
		"iss": ring.Issuer(), "aud": d.url.String(), "iat": now.Unix(), "exp": now.Add(ttl).Unix(),
		"jti": d.id, claimTaskID: d.taskID, "config_id": d.configID,
		"body_sha256": base64.RawURLEncoding.EncodeToString(sum[:]),
	})
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(context.WithValue(p.ctx, guardKey{}, d.guard), d.limits.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url.String(), strings.NewReader(string(d.body)))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", d.ctype)
	req.Header.Set(SignatureHeader, jwt)
	if d.auth != "" {
		req.Header.Set("Authorization", d.auth)
	}
	if d.token != "" {
		req.Header.Set(TokenHeader, d.token)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return !errors.Is(err, ErrPushURL) && p.ctx.Err() == nil, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxReceiverBody))
	_ = resp.Body.Close()
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		return false, nil
	case c == http.StatusRequestTimeout, c == http.StatusTooEarly, c == http.StatusTooManyRequests, c >= 500:
		return true, errStatus(c)
	default:
		return false, errStatus(c)
	}
}

// notify queues ev for each webhook of task r (as the store holds them now), spelled in
// the version each config was created in.
func (p *pusher) notify(ctx context.Context, x *exchange, r *record, ev a2a.Event) {
	c := x.cfg.Push
	if c == nil || !c.Enabled || !p.start(c) {
		return
	}
	g, err := newGuard(c)
	if err != nil {
		return // Validate refused this configuration
	}
	cfgs, err := x.pushStore().list(ctx, r.ID)
	if err != nil {
		p.f.log.Error("a2a: reading a task's push configs", claimTaskID, r.ID, "err", err)
		return
	}
	for _, sc := range cfgs {
		body, err := a2a.MarshalEvent(ev, sc.Version)
		if err != nil {
			continue
		}
		u, err := url.Parse(sc.Config.URL)
		if err != nil {
			continue
		}
		d := &delivery{id: newID("push-"), taskID: r.ID, configID: sc.Config.ID, url: u, guard: g, limits: *c,
			body: body, ctype: contentType10, token: sc.Config.Token}
		if sc.Version == a2a.V03 {
			d.ctype = mediaJSON
		}
		if a := sc.Config.Authentication; a != nil && a.SchemeName() != "" {
			d.auth = a.SchemeName() + " " + a.Credentials
		}
		p.enqueue(d, false)
	}
}

// watch follows task r for its webhooks unless this process already does; false when it
// follows a2a.push.max_watched_tasks tasks already.
func (p *pusher) watch(x *exchange, r *record) bool {
	c := x.cfg.Push
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.watching[r.ID]; ok {
		return true
	}
	if p.closed || len(p.watching) >= c.MaxWatchedTasks || !p.start(c) {
		return false
	}
	p.watching[r.ID] = struct{}{}
	ex := x.ex
	ex.Span = nil
	owner := x.owner
	p.wg.Go(func() {
		defer func() {
			p.mu.Lock()
			delete(p.watching, r.ID)
			p.mu.Unlock()
		}()
		p.follow(r, ex, owner)
	})
	return true
}

// follow posts task r's state changes and, when it ends, the task as GetTask answers it to
// its owner — read through the pipeline as that principal, so a webhook never gets more
// than its owner may see (and nothing once the owner's credential is refused).
func (p *pusher) follow(r *record, ex faces.Exchange, o owner) {
	rt := p.f.gw.Acquire()
	defer rt.Release()
	cfg := rt.A2A()
	if cfg == nil || cfg.Push == nil || !cfg.Push.Enabled {
		return
	}
	ctx, cancel := context.WithTimeout(p.ctx, cfg.TaskTTL)
	defer cancel()
	x := &exchange{f: p.f, rt: rt, cfg: cfg, p: rt.Pipeline(), ex: ex, owner: o}
	x.ex.Deadline = x.p.Resolve(0)
	params, _ := json.Marshal(map[string]string{claimTaskID: r.ID})
	out := x.call(ctx, rn.MethodTaskStream, params)
	if out.Err != nil || out.Res == nil || out.Res.Stream == nil {
		p.f.log.Warn("a2a: following a task for its webhooks", claimTaskID, r.ID, "err", out.Err)
		return
	}
	s := out.Res.Stream
	defer func() { _ = s.Close() }()
	tr := newTracker(r, p.f.now)
	last := a2a.TaskState("")
	for {
		msg, err := s.Recv(ctx)
		if err != nil {
			break
		}
		evs, final := tr.apply(msg)
		if final {
			break
		}
		for _, ev := range evs {
			if ev.Status != nil && ev.Status.Status.State != last {
				last = ev.Status.Status.State
				p.notify(ctx, x, r, ev)
			}
		}
	}
	if ctx.Err() != nil {
		return
	}
	x.ex.Deadline = x.p.Resolve(0)
	t, aerr := x.current(ctx, r, true)
	if aerr != nil {
		p.f.log.Warn("a2a: reading a task for its webhooks", claimTaskID, r.ID, "code", aerr.Code)
		return
	}
	if !t.Status.State.Terminal() {
		return // the stream ended early (the owner's credential, a lost replica): nothing final to say
	}
	t = x.trimmed(t, nil)
	p.notify(ctx, x, r, a2a.Event{Task: &t, Final: true})
}

// ringOf returns the key ring o gives, nil without one.
func ringOf(o func() *auth.KeyRing) func() *auth.KeyRing {
	if o == nil {
		return func() *auth.KeyRing { return nil }
	}
	return o
}
