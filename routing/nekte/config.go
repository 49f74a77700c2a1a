package nekte

import (
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse-dev/gatehouse/routing/capability"
)

// Config is the nekte section of the configuration: delegated tasks, context envelopes,
// receipts, and the capability catalog. Zero fields take the defaults named on them.
type Config struct {
	// Tasks bounds delegated tasks.
	Tasks TasksConfig `yaml:"tasks" json:"tasks"`
	// Contexts bounds context envelopes.
	Contexts ContextsConfig `yaml:"contexts" json:"contexts"`
	// Receipts configures the key that signs task receipts.
	Receipts ReceiptsConfig `yaml:"receipts" json:"receipts"`
	// Catalog configures the capability catalog behind nekte.discover and nekte.invoke.
	Catalog capability.Config `yaml:"catalog" json:"catalog"`
}

// TasksConfig bounds delegated tasks.
type TasksConfig struct {
	// MaxPerOwner is how many unfinished tasks (pending, accepted, running or suspended)
	// one principal may have at a time (default 32).
	MaxPerOwner int `yaml:"max_per_owner" json:"max_per_owner,omitempty"`
	// MaxInputBytes bounds a task's input, task.in (default 64 KiB).
	MaxInputBytes int `yaml:"max_input_bytes" json:"max_input_bytes,omitempty"`
	// MaxResultBytes bounds the result collected from a capability, a streamed result's
	// messages together (default 4 MiB); past it the task fails.
	MaxResultBytes int `yaml:"max_result_bytes" json:"max_result_bytes,omitempty"`
	// RecordTTL is how long a finished task's record (status, events, receipt) is kept
	// (default 1h).
	RecordTTL time.Duration `yaml:"record_ttl" json:"record_ttl,omitempty"`
	// ActiveTTL is how long an unfinished task's record lives without a change (default
	// 24h): a suspended task must be resumed within it.
	ActiveTTL time.Duration `yaml:"active_ttl" json:"active_ttl,omitempty"`
	// DefaultTimeout is a task's running time limit when task.timeout_ms is absent or 0
	// (default 10m).
	DefaultTimeout time.Duration `yaml:"default_timeout" json:"default_timeout,omitempty"`
	// MaxTimeout caps task.timeout_ms (default 1h); a longer one is lowered to it.
	MaxTimeout time.Duration `yaml:"max_timeout" json:"max_timeout,omitempty"`
	// MaxEvents bounds the events kept in a task's log for re-attaching callers (default
	// 256); the oldest go first, the final event always stays.
	MaxEvents int `yaml:"max_events" json:"max_events,omitempty"`
	// MaxEventBytes bounds the bytes of a task's event log (default 256 KiB). An event
	// larger than this is kept in a reduced form (see docs/nekte-tasks.md).
	MaxEventBytes int `yaml:"max_event_bytes" json:"max_event_bytes,omitempty"`
	// MaxPartials bounds the partial results saved in a checkpoint (default 16).
	MaxPartials int `yaml:"max_partials" json:"max_partials,omitempty"`
	// PollInterval is how often a task's stream reads the store when the task runs in
	// another process, and how often a running task checks whether another process
	// cancelled or suspended it (default 250ms).
	PollInterval time.Duration `yaml:"poll_interval" json:"poll_interval,omitempty"`
	// DrainTimeout bounds how long Close waits for running tasks to be suspended
	// (default 10s).
	DrainTimeout time.Duration `yaml:"drain_timeout" json:"drain_timeout,omitempty"`
	// Lease is how long a running task's record vouches for its runner; the runner renews
	// it every third of it. A running task whose lease lapsed (its replica died without
	// suspending it) is suspended with a checkpoint by the next replica that reads it, and
	// can be resumed anywhere (default 10s; at least 4 × poll_interval, at most 10m).
	Lease time.Duration `yaml:"lease" json:"lease,omitempty"`
}

// ContextsConfig bounds context envelopes.
type ContextsConfig struct {
	// DefaultTTL is an envelope's lifetime when ttl_s is absent or 0 (default 1h).
	DefaultTTL time.Duration `yaml:"default_ttl" json:"default_ttl,omitempty"`
	// MaxTTL caps ttl_s (default 24h); a longer one is lowered to it.
	MaxTTL time.Duration `yaml:"max_ttl" json:"max_ttl,omitempty"`
	// ExpiredGrace is how long an expired envelope is remembered, so that asking for it
	// answers CONTEXT_EXPIRED rather than not_found (default 1h).
	ExpiredGrace time.Duration `yaml:"expired_grace" json:"expired_grace,omitempty"`
	// MaxDataBytes bounds an envelope's data (default 64 KiB).
	MaxDataBytes int `yaml:"max_data_bytes" json:"max_data_bytes,omitempty"`
	// MaxLocal bounds the persist: false envelopes held in this process (default 10000).
	MaxLocal int `yaml:"max_local" json:"max_local,omitempty"`
	// PeerTimeout bounds one call to the replica that holds a persist: false envelope
	// (fetch or revoke, over the internal listener; default 2s, at most MaxPeerTimeout).
	// A replica that does not answer in time counts as gone, and so does its envelope.
	PeerTimeout time.Duration `yaml:"peer_timeout" json:"peer_timeout,omitempty"`
}

// ReceiptsConfig configures the key that signs task receipts.
type ReceiptsConfig struct {
	// KeyFile is a PEM file holding the signing key: an Ed25519 key (EdDSA) or an ECDSA
	// P-256 key (ES256), PKCS #8 or SEC 1. Empty: an Ed25519 key is generated at start-up;
	// it lives as long as the process, so receipts then verify only on the replica that
	// signed them and only until it restarts.
	KeyFile string `yaml:"key_file" json:"key_file,omitempty"`
	// Issuer is the receipts' iss claim (default "gatehouse").
	Issuer string `yaml:"issuer" json:"issuer,omitempty"`
}

// Defaults of Config.
const (
	DefaultMaxPerOwner    = 32
	DefaultMaxInputBytes  = 64 << 10
	DefaultMaxResultBytes = 4 << 20
	DefaultRecordTTL      = time.Hour
	DefaultActiveTTL      = 24 * time.Hour
	DefaultTaskTimeout    = 10 * time.Minute
	DefaultMaxTaskTimeout = time.Hour
	DefaultMaxEvents      = 256
	DefaultMaxEventBytes  = 256 << 10
	DefaultMaxPartials    = 16
	DefaultPollInterval   = 250 * time.Millisecond
	DefaultDrainTimeout   = 10 * time.Second
	DefaultLease          = 10 * time.Second
	// MaxLease bounds tasks.lease: how long a lost runner's task may look alive.
	MaxLease = 10 * time.Minute

	DefaultContextTTL    = time.Hour
	DefaultMaxContextTTL = 24 * time.Hour
	DefaultExpiredGrace  = time.Hour
	DefaultMaxDataBytes  = 64 << 10
	DefaultMaxLocal      = 10000
	DefaultPeerTimeout   = 2 * time.Second

	DefaultIssuer = "gatehouse"
)

// MaxPeerTimeout is the highest contexts.peer_timeout accepted: a peer call holds the
// request that needs the envelope.
const MaxPeerTimeout = 30 * time.Second

// recordOverhead is the room a task record needs beside its input and event log (ids,
// description, timestamps, receipt, checkpoint progress).
const recordOverhead = 32 << 10

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	t := &c.Tasks
	setInt(&t.MaxPerOwner, DefaultMaxPerOwner)
	setInt(&t.MaxInputBytes, DefaultMaxInputBytes)
	setInt(&t.MaxResultBytes, DefaultMaxResultBytes)
	setDur(&t.RecordTTL, DefaultRecordTTL)
	setDur(&t.ActiveTTL, DefaultActiveTTL)
	setDur(&t.DefaultTimeout, DefaultTaskTimeout)
	setDur(&t.MaxTimeout, DefaultMaxTaskTimeout)
	setInt(&t.MaxEvents, DefaultMaxEvents)
	setInt(&t.MaxEventBytes, DefaultMaxEventBytes)
	setInt(&t.MaxPartials, DefaultMaxPartials)
	setDur(&t.PollInterval, DefaultPollInterval)
	setDur(&t.DrainTimeout, DefaultDrainTimeout)
	setDur(&t.Lease, DefaultLease)
	x := &c.Contexts
	setDur(&x.DefaultTTL, DefaultContextTTL)
	setDur(&x.MaxTTL, DefaultMaxContextTTL)
	setDur(&x.ExpiredGrace, DefaultExpiredGrace)
	setInt(&x.MaxDataBytes, DefaultMaxDataBytes)
	setInt(&x.MaxLocal, DefaultMaxLocal)
	setDur(&x.PeerTimeout, DefaultPeerTimeout)
	if c.Receipts.Issuer == "" {
		c.Receipts.Issuer = DefaultIssuer
	}
	return c
}

func setInt(v *int, d int) {
	if *v == 0 {
		*v = d
	}
}

func setDur(v *time.Duration, d time.Duration) {
	if *v == 0 {
		*v = d
	}
}

// Validate reports every setting New would refuse: negative bounds, a default above its
// maximum, and a record that could not fit the state store's value limit
// (state.DefaultMaxValueBytes; New checks the store's own limit).
func (c Config) Validate() error {
	d := c.WithDefaults()
	var errs []error
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"tasks.max_per_owner", int64(c.Tasks.MaxPerOwner)},
		{"tasks.max_input_bytes", int64(c.Tasks.MaxInputBytes)},
		{"tasks.max_result_bytes", int64(c.Tasks.MaxResultBytes)},
		{"tasks.record_ttl", int64(c.Tasks.RecordTTL)},
		{"tasks.active_ttl", int64(c.Tasks.ActiveTTL)},
		{"tasks.default_timeout", int64(c.Tasks.DefaultTimeout)},
		{"tasks.max_timeout", int64(c.Tasks.MaxTimeout)},
		{"tasks.max_events", int64(c.Tasks.MaxEvents)},
		{"tasks.max_event_bytes", int64(c.Tasks.MaxEventBytes)},
		{"tasks.max_partials", int64(c.Tasks.MaxPartials)},
		{"tasks.poll_interval", int64(c.Tasks.PollInterval)},
		{"tasks.drain_timeout", int64(c.Tasks.DrainTimeout)},
		{"tasks.lease", int64(c.Tasks.Lease)},
		{"contexts.default_ttl", int64(c.Contexts.DefaultTTL)},
		{"contexts.max_ttl", int64(c.Contexts.MaxTTL)},
		{"contexts.expired_grace", int64(c.Contexts.ExpiredGrace)},
		{"contexts.max_data_bytes", int64(c.Contexts.MaxDataBytes)},
		{"contexts.max_local", int64(c.Contexts.MaxLocal)},
		{"contexts.peer_timeout", int64(c.Contexts.PeerTimeout)},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("nekte: %s must not be negative", f.name))
		}
	}
	if d.Tasks.DefaultTimeout > d.Tasks.MaxTimeout {
		errs = append(errs, fmt.Errorf("nekte: tasks.default_timeout (%v) is above tasks.max_timeout (%v)", d.Tasks.DefaultTimeout, d.Tasks.MaxTimeout))
	}
	if d.Tasks.Lease < 4*d.Tasks.PollInterval || d.Tasks.Lease > MaxLease {
		errs = append(errs, fmt.Errorf("nekte: tasks.lease (%v) must be between 4 × tasks.poll_interval (%v) and %v", d.Tasks.Lease, 4*d.Tasks.PollInterval, MaxLease))
	}
	if d.Contexts.DefaultTTL > d.Contexts.MaxTTL {
		errs = append(errs, fmt.Errorf("nekte: contexts.default_ttl (%v) is above contexts.max_ttl (%v)", d.Contexts.DefaultTTL, d.Contexts.MaxTTL))
	}
	if d.Contexts.PeerTimeout > MaxPeerTimeout {
		errs = append(errs, fmt.Errorf("nekte: contexts.peer_timeout (%v) is above %v", d.Contexts.PeerTimeout, MaxPeerTimeout))
	}
	if d.Contexts.DefaultTTL%time.Second != 0 || d.Contexts.MaxTTL%time.Second != 0 {
		errs = append(errs, errors.New("nekte: contexts.default_ttl and contexts.max_ttl must be whole seconds"))
	}
	errs = append(errs, d.checkRecordSize(stateValueLimit))
	if err := c.Catalog.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("nekte: catalog: %w", err))
	}
	return errors.Join(errs...)
}

// checkRecordSize reports a configuration whose largest task record would not fit in a
// store value of limit bytes.
func (c Config) checkRecordSize(limit int) error {
	need := int64(c.Tasks.MaxInputBytes) + int64(c.Contexts.MaxDataBytes) + 2*int64(c.Tasks.MaxEventBytes) + recordOverhead
	if need > int64(limit) {
		return fmt.Errorf("nekte: a task record may need %d bytes (tasks.max_input_bytes + contexts.max_data_bytes + twice tasks.max_event_bytes, for the log and a checkpoint's partials, + %d of overhead), above the state store's value limit of %d bytes", need, recordOverhead, limit)
	}
	return nil
}
