package a2a

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net/http"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Observer is told of card fetches (the server counts them); nil methods are not called.
type Observer interface {
	// CardLoaded is called after each fetch: ok, or refused with reason "fetch" (the card
	// or the JWKS could not be read), "signature" (a signature did not verify, or an
	// unsigned card where one is required) or "invalid" (not a usable card).
	CardLoaded(agent string, ok bool, reason string)
}

// Options are what an agent's target needs beyond its configuration.
type Options struct {
	Logger   *slog.Logger
	Observer Observer
	// Seed is the target of the same agent in the configuration being replaced: when its
	// section is unchanged, the new target starts with its card (a reload does not leave
	// the agent without skills until the next fetch).
	Seed *Target
}

// Target is one upstream A2A agent: its card's skills are methods under its prefix, each
// call a SendMessage (SendStreamingMessage when the caller takes progress) to the agent.
type Target struct {
	cfg    Config
	hop    gateway.HopAuth
	client *http.Client
	log    *slog.Logger
	obs    Observer

	card atomic.Pointer[card]
	gen  atomic.Uint64 // one more with every card that changed the skills
	// failures counts card fetches refused (any reason) since start.
	failures atomic.Uint64
	lastErr  atomic.Pointer[error]

	stop    chan struct{}
	stopped sync.Once
	wg      sync.WaitGroup // the refresher and the CancelTasks in flight
}

var (
	_ gateway.Target           = (*Target)(nil)
	_ gateway.Closer           = (*Target)(nil)
	_ gateway.Readier          = (*Target)(nil)
	_ gateway.Backended        = (*Target)(nil)
	_ gateway.HopAuthenticated = (*Target)(nil)
)

// New returns the target of a validated agent section and starts fetching its card in
// the background: the first fetch at once, then every card_refresh. Until a card is
// loaded the target has no skills and its calls fail with UNAVAILABLE.
func New(cfg Config, opts Options) (*Target, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.TLS != nil {
		tc, err := cfg.TLS.Load()
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = tc
	} else {
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &Target{
		cfg: cfg, hop: cfg.DownstreamToken.HopAuth(cfg.Name), log: log.With("a2a_agent", cfg.Name), obs: opts.Observer,
		client: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a redirect would carry the hop token elsewhere
		}},
		stop: make(chan struct{}),
	}
	if sd := opts.Seed; sd != nil && reflect.DeepEqual(sd.cfg, cfg) {
		if c := sd.card.Load(); c != nil {
			t.card.Store(c)
			t.gen.Store(sd.gen.Load())
		}
	}
	t.wg.Add(1)
	go t.refresh()
	return t, nil
}

// Config returns the agent's section with its defaults.
func (t *Target) Config() Config { return t.cfg }

// Name implements gateway.Target.
func (t *Target) Name() string { return BackendPrefix + t.cfg.Name }

// Backend implements gateway.Backended: every call of the agent shares its breaker,
// retry budget and admission queue.
func (t *Target) Backend(*gateway.Call) string { return BackendPrefix + t.cfg.Name }

// HopAuth implements gateway.HopAuthenticated.
func (t *Target) HopAuth(*gateway.Call) gateway.HopAuth { return t.hop }

// Prefix is the method prefix of the agent's skills.
func (t *Target) Prefix() string { return t.cfg.Prefix }

// Ready implements gateway.Readier: nil once a card is loaded.
func (t *Target) Ready(context.Context) error {
	if t.card.Load() != nil {
		return nil
	}
	if e := t.lastErr.Load(); e != nil {
		return gateway.Errorf(schemas.CodeUnavailable, "a2a agent %s: no card: %v", t.cfg.Name, *e)
	}
	return gateway.Errorf(schemas.CodeUnavailable, "a2a agent %s: the card is not loaded yet", t.cfg.Name)
}

// Skills returns the skills of the agent's current card and the generation they belong to
// (0 before the first card; it changes whenever a fetched card changes the skills).
func (t *Target) Skills() ([]Skill, uint64) {
	for {
		g := t.gen.Load()
		c := t.card.Load()
		if g%2 == 1 || t.gen.Load() != g {
			continue
		}
		if c == nil {
			return nil, g
		}
		return c.skills, g
	}
}

// Generation is the generation Skills would return.
func (t *Target) Generation() uint64 { return t.gen.Load() }

// CardFailures returns how many card fetches were refused since start.
func (t *Target) CardFailures() uint64 { return t.failures.Load() }

// Close stops the refresher and waits for it and for the CancelTasks in flight.
func (t *Target) Close() error {
	t.stopped.Do(func() { close(t.stop) })
	t.wg.Wait()
	t.client.CloseIdleConnections()
	return nil
}

// refresh fetches the card now and every card_refresh until Close.
func (t *Target) refresh() {
	defer t.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-t.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	tick := time.NewTicker(t.cfg.CardRefresh)
	defer tick.Stop()
	for {
		t.Reload(ctx)
		select {
		case <-t.stop:
			return
		case <-tick.C:
		}
	}
}

// Reload fetches the card now. A card that cannot be fetched or is refused leaves the
// last good one serving; the refusal is logged, counted and reported to the Observer.
func (t *Target) Reload(ctx context.Context) {
	c, err := t.fetchCard(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return // closing
		}
		reason := "invalid"
		var fe *fetchError
		switch {
		case errors.Is(err, ErrCardSignature):
			reason = "signature"
		case errors.As(err, &fe):
			reason = "fetch"
		}
		t.failures.Add(1)
		t.lastErr.Store(&err)
		t.log.Warn("a2a agent card refused; the last good card keeps serving", "reason", reason, "error", err)
		if t.obs != nil {
			t.obs.CardLoaded(t.cfg.Name, false, reason)
		}
		return
	}
	prev := t.card.Load()
	if prev == nil || !sameSkills(prev, c) {
		t.gen.Add(1)
	}
	t.card.Store(c)
	if prev == nil || !sameSkills(prev, c) {
		t.gen.Add(1) // even: a reader between the two adds retries (Skills)
	}
	if t.obs != nil {
		t.obs.CardLoaded(t.cfg.Name, true, "")
	}
}

// sameSkills reports whether two cards serve the same skills the same way.
func sameSkills(a, b *card) bool {
	if a.endpoint != b.endpoint || a.version != b.version || a.streaming != b.streaming || len(a.skills) != len(b.skills) {
		return false
	}
	for i := range a.skills {
		x, y := a.skills[i], b.skills[i]
		if x.ID != y.ID || x.Name != y.Name || x.Description != y.Description || !equalStrings(x.Tags, y.Tags) || !equalStrings(x.Examples, y.Examples) {
			return false
		}
	}
	return true
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// fetchError is a card or JWKS that could not be read (network, status, size).
type fetchError struct{ err error }

func (e *fetchError) Error() string { return e.err.Error() }
func (e *fetchError) Unwrap() error { return e.err }
