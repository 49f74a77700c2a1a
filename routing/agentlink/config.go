package agentlink

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// Config is the agents section: how the agent link on the internal gRPC listener accepts
// agents and dispatches tasks to them. It is read at start; a reload that changes it is
// logged and takes effect on restart (connected agents keep their negotiated settings).
type Config struct {
	// Namespace is put before an operator's id to make its JSON-RPC method and capability
	// id (default "agent.").
	Namespace string `yaml:"namespace" json:"namespace,omitempty"`
	// Versions are the protocol versions the gateway speaks, each "major.minor.patch"
	// (default ["1.0.0"]). An agent version matches one of these when major and minor are
	// equal (a patch is a clarification); anything else is rejected, naming both lists.
	Versions []string `yaml:"versions" json:"versions,omitempty"`
	// HeartbeatInterval is how often each side sends a heartbeat (default 5s).
	HeartbeatInterval time.Duration `yaml:"heartbeat_interval" json:"heartbeat_interval,omitempty"`
	// MissedHeartbeats is k: an agent silent for k intervals is gone and each of its tasks
	// fails with AGENT_GONE (default 3).
	MissedHeartbeats int `yaml:"missed_heartbeats" json:"missed_heartbeats,omitempty"`
	// MaxFrameBytes bounds one message from an agent (default 1 MiB); a larger one
	// disconnects the agent. It is at most server.internal.max_recv_bytes in effect.
	MaxFrameBytes int `yaml:"max_frame_bytes" json:"max_frame_bytes,omitempty"`
	// MaxOperators bounds the operators one agent may advertise (default 64).
	MaxOperators int `yaml:"max_operators" json:"max_operators,omitempty"`
	// MaxSchemaBytes bounds each operator's input and output JSON Schema (default 64 KiB).
	MaxSchemaBytes int `yaml:"max_schema_bytes" json:"max_schema_bytes,omitempty"`
	// MaxAgents bounds the agents connected at once (default 256).
	MaxAgents int `yaml:"max_agents" json:"max_agents,omitempty"`
	// MaxConcurrentTasks is the per-agent concurrency limit (default 16); an agent's
	// descriptor may ask for fewer, never more.
	MaxConcurrentTasks int `yaml:"max_concurrent_tasks" json:"max_concurrent_tasks,omitempty"`
	// DispatchTimeout is a task's timeout when its call's deadline is later (default 60s).
	DispatchTimeout time.Duration `yaml:"dispatch_timeout" json:"dispatch_timeout,omitempty"`
	// MaxMessagesPerSecond bounds the messages one agent may send (a token bucket with a
	// burst of the same size; default 10000); a flood disconnects it.
	MaxMessagesPerSecond int `yaml:"max_messages_per_second" json:"max_messages_per_second,omitempty"`
	// HandshakeTimeout bounds the wait for an agent's node descriptor (default 10s).
	HandshakeTimeout time.Duration `yaml:"handshake_timeout" json:"handshake_timeout,omitempty"`
	// AllowExternalDataRefs lets callers pass DataRefs other than blob: refs (any URL),
	// which reach the agent untouched, when the blobs section is configured (default false:
	// such a ref is refused with INVALID_PARAMS, as a caller handing an agent an arbitrary
	// URL makes the agent fetch it from its own network). Without a blobs section every
	// DataRef travels untouched.
	AllowExternalDataRefs bool `yaml:"allow_external_data_refs" json:"allow_external_data_refs,omitempty"`
	// MaxSharedCatalogBytes bounds the catalog of this replica's agents' operators that it
	// publishes in the shared state store for the other replicas, and the catalog of another
	// replica it reads (default 1 MiB). Operators past it are left out of the other replicas'
	// catalogs (a warning says so); their methods still reach them.
	MaxSharedCatalogBytes int `yaml:"max_shared_catalog_bytes" json:"max_shared_catalog_bytes,omitempty"`
	// ForwardedProgressBuffer bounds the progress reports of a task another replica
	// forwarded that wait to be sent back to it (default 64); past it a report is dropped —
	// progress is advisory, the result is never dropped.
	ForwardedProgressBuffer int `yaml:"forwarded_progress_buffer" json:"forwarded_progress_buffer,omitempty"`
	// Auth says which agents may connect, and which are trusted.
	Auth AuthConfig `yaml:"auth" json:"auth,omitzero"`
}

// AuthConfig is agents.auth. An agent authenticates like any internal caller: a client
// certificate the internal listener verified (mTLS) or a bearer JWT in the gRPC metadata,
// through the auth section. Its principal must hold the scope agent:serve (every operator)
// or agent:serve:<operator> for each operator it advertises; the descriptor itself is never
// trusted for authorization.
type AuthConfig struct {
	// RequireCredential refuses agents without a credential the authenticator accepts
	// (default true: absent means true).
	RequireCredential *bool `yaml:"require_credential" json:"require_credential,omitempty"`
	// AllowLoopbackAnonymous lets an agent without a credential connect from a loopback
	// address (127.0.0.0/8, ::1) even when RequireCredential is set; it may then serve any
	// operator (default false). The embedded default configuration sets it for the tour.
	AllowLoopbackAnonymous bool `yaml:"allow_loopback_anonymous" json:"allow_loopback_anonymous,omitempty"`
	// TrustedScope is the scope whose holder is a trusted agent (default "agent:trusted"):
	// its tasks get plain blob URLs and one scoped task token instead of signed URLs. A
	// credential gets it like any scope: a JWT's scope claim, or auth.client_cert.scopes for
	// every verified client certificate.
	TrustedScope string `yaml:"trusted_scope" json:"trusted_scope,omitempty"`
	// TrustedCertIdentities are the identities of client certificates (auth.CertIdentity:
	// the SPIFFE id, else the subject's common name) whose agents are trusted when they
	// connect with that certificate alone (mTLS, no bearer token nor API key).
	TrustedCertIdentities []string `yaml:"trusted_cert_identities" json:"trusted_cert_identities,omitempty"`
}

// DefaultTrustedScope is agents.auth.trusted_scope's default.
const DefaultTrustedScope = "agent:trusted"

// trusted reports whether the agent p authenticated with creds is trusted: never an
// anonymous one; one whose principal holds the trusted scope; one that presented only a
// client certificate whose identity is listed.
func (a AuthConfig) trusted(p gateway.Principal, anonymous bool, creds gateway.Credentials) bool {
	if anonymous || p.Anonymous {
		return false
	}
	scope := a.TrustedScope
	if scope == "" {
		scope = DefaultTrustedScope
	}
	if slices.Contains(p.Scopes, scope) {
		return true
	}
	mtlsOnly := creds.ClientCert != nil && creds.Bearer == "" && creds.APIKey == ""
	return mtlsOnly && slices.Contains(a.TrustedCertIdentities, p.Subject)
}

// Scopes an agent's principal must hold to serve operators.
const (
	// ScopeServe lets an agent serve every operator.
	ScopeServe = "agent:serve"
	// ScopeServePrefix followed by an operator's id lets an agent serve that operator.
	ScopeServePrefix = "agent:serve:"
)

// Defaults of the agents section.
const (
	DefaultNamespace            = "agent."
	DefaultVersion              = "1.0.0"
	DefaultHeartbeatInterval    = 5 * time.Second
	DefaultMissedHeartbeats     = 3
	DefaultMaxFrameBytes        = 1 << 20
	DefaultMaxOperators         = 64
	DefaultMaxSchemaBytes       = 64 << 10
	DefaultMaxAgents            = 256
	DefaultMaxConcurrentTasks   = 16
	DefaultDispatchTimeout      = 60 * time.Second
	DefaultMaxMessagesPerSecond = 10000
	DefaultHandshakeTimeout     = 10 * time.Second
	// DefaultForwardedProgressBuffer is agents.forwarded_progress_buffer's default.
	DefaultForwardedProgressBuffer = 64
)

// WithDefaults returns c with every zero setting at its default.
func (c Config) WithDefaults() Config {
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if len(c.Versions) == 0 {
		c.Versions = []string{DefaultVersion}
	}
	setDefault(&c.HeartbeatInterval, DefaultHeartbeatInterval)
	setDefault(&c.MissedHeartbeats, DefaultMissedHeartbeats)
	setDefault(&c.MaxFrameBytes, DefaultMaxFrameBytes)
	setDefault(&c.MaxOperators, DefaultMaxOperators)
	setDefault(&c.MaxSchemaBytes, DefaultMaxSchemaBytes)
	setDefault(&c.MaxAgents, DefaultMaxAgents)
	setDefault(&c.MaxConcurrentTasks, DefaultMaxConcurrentTasks)
	setDefault(&c.DispatchTimeout, DefaultDispatchTimeout)
	setDefault(&c.MaxMessagesPerSecond, DefaultMaxMessagesPerSecond)
	setDefault(&c.HandshakeTimeout, DefaultHandshakeTimeout)
	setDefault(&c.MaxSharedCatalogBytes, DefaultMaxSharedCatalogBytes)
	setDefault(&c.ForwardedProgressBuffer, DefaultForwardedProgressBuffer)
	if c.Auth.TrustedScope == "" {
		c.Auth.TrustedScope = DefaultTrustedScope
	}
	return c
}

func setDefault[T int | time.Duration](v *T, def T) {
	if *v == 0 {
		*v = def
	}
}

// requireCredential is auth.require_credential with its default.
func (a AuthConfig) requireCredential() bool {
	return a.RequireCredential == nil || *a.RequireCredential
}

// Validate checks c (before defaults): no negative limit, a namespace that ends in a
// separator, versions that parse.
func (c Config) Validate() error {
	var errs []error
	for name, v := range map[string]int64{
		"heartbeat_interval": int64(c.HeartbeatInterval), "missed_heartbeats": int64(c.MissedHeartbeats),
		"max_frame_bytes": int64(c.MaxFrameBytes), "max_operators": int64(c.MaxOperators),
		"max_schema_bytes": int64(c.MaxSchemaBytes), "max_agents": int64(c.MaxAgents),
		"max_concurrent_tasks": int64(c.MaxConcurrentTasks), "dispatch_timeout": int64(c.DispatchTimeout),
		"max_messages_per_second": int64(c.MaxMessagesPerSecond), "handshake_timeout": int64(c.HandshakeTimeout),
		"max_shared_catalog_bytes": int64(c.MaxSharedCatalogBytes), "forwarded_progress_buffer": int64(c.ForwardedProgressBuffer),
	} {
		if v < 0 {
			errs = append(errs, fmt.Errorf("agents.%s: must not be negative", name))
		}
	}
	if c.HeartbeatInterval > 0 && c.HeartbeatInterval < 10*time.Millisecond {
		errs = append(errs, errors.New("agents.heartbeat_interval: must be at least 10ms"))
	}
	if c.Namespace != "" && !validNamespace(c.Namespace) {
		errs = append(errs, fmt.Errorf("agents.namespace: %q must be letters, digits, '_' or '-', ending in '.' or '_'", c.Namespace))
	}
	if sc := c.Auth.TrustedScope; sc != "" && (strings.ContainsAny(sc, " \t\r\n") || sc == ScopeServe || strings.HasPrefix(sc, ScopeServePrefix)) {
		errs = append(errs, fmt.Errorf("agents.auth.trusted_scope: %q must be one scope (no spaces), other than the agent:serve scopes", sc))
	}
	for _, id := range c.Auth.TrustedCertIdentities {
		if id == "" {
			errs = append(errs, errors.New("agents.auth.trusted_cert_identities: an identity must not be empty"))
		}
	}
	for _, v := range c.Versions {
		if _, err := parseVersion(v); err != nil {
			errs = append(errs, fmt.Errorf("agents.versions: %w", err))
		}
	}
	return errors.Join(errs...)
}

func validNamespace(ns string) bool {
	last := ns[len(ns)-1]
	if len(ns) > 32 || (last != '.' && last != '_') {
		return false
	}
	for _, r := range ns[:len(ns)-1] {
		if !isIDRune(r) && r != '.' {
			return false
		}
	}
	return true
}
