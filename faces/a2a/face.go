package a2aface

import (
	"log/slog"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/state"
)

// Paths of the face on the boundary listener.
const (
	// Path is the JSON-RPC binding's endpoint.
	Path = "/a2a"
	// CardPath is the agent card's well-known path.
	CardPath = "/.well-known/agent-card.json"
)

// Gateway is what the face sees of the gateway.
type Gateway interface {
	// Acquire returns the configuration in force, held until its Release.
	Acquire() Runtime
}

// Runtime is one configuration as this face sees it.
type Runtime interface {
	faces.Runtime
	// A2A returns the a2a section with its defaults; nil when the face is off.
	A2A() *Config
	// Skills returns the capabilities the caller may see (nil principal: a caller without
	// credentials), in catalog order; nil when NEKTE is off.
	Skills(p *gateway.Principal) []capability.Capability
	// Security returns what the auth section accepts, for the card.
	Security() Security
}

// Security is what the auth section accepts, as the card announces it.
type Security struct {
	// Bearer says bearer JWTs are verified (auth.jwt).
	Bearer bool
	// APIKeyHeader names the header API keys travel in; empty when none are configured.
	APIKeyHeader string
	// Anonymous says a caller without credentials is let in (perhaps from loopback only).
	Anonymous bool
	// ResourceMetadata is the URL of the OAuth protected-resource metadata, when
	// configured.
	ResourceMetadata string
}

// Options are what a Face is built with beside its gateway.
type Options struct {
	// State keeps the tasks' records (their binding to a principal, their message).
	State state.KV
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Log hears what fails outside a call.
	Log *slog.Logger
	// Version is the gateway's version, the card's default.
	Version string
	// KeyRing returns the gateway's key ring (nil: none), which signs the card
	// (a2a.card.sign) and each push notification.
	KeyRing func() *auth.KeyRing
	// PushOutcome, when set, hears the outcome of each push delivery attempt
	// (PushDelivered, PushRetried, PushFailed, PushDropped), for a metric.
	PushOutcome func(outcome string)
}

// Face is the A2A face.
type Face struct {
	gw   Gateway
	kv   state.KV
	now  func() time.Time
	log  *slog.Logger
	vers string
	ring func() *auth.KeyRing
	push *pusher

	pushOutcome func(string)
}

// New returns the face serving gw's configurations.
func New(gw Gateway, o Options) *Face {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	f := &Face{gw: gw, kv: o.State, now: o.Now, log: o.Log, vers: o.Version, ring: ringOf(o.KeyRing), pushOutcome: o.PushOutcome}
	f.push = newPusher(f)
	return f
}

// Close stops the push notification goroutines (the delivery workers, their retry timers
// and the tasks' watchers) and waits for them; deliveries not yet made are dropped.
func (f *Face) Close() { f.push.close() }
