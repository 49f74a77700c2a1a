package approval

import (
	"fmt"
	"time"
)

// Config is the approvals section: how calls the policy marks as needing a human's
// approval are held (NewStage), decided on the admin listener (Admin), and audited. The
// approval stage is in the chain whenever the policy stage is, with these defaults when
// the section is absent: a call that needs approval is never let through unapproved.
type Config struct {
	// Timeout is how long an approval stays pending: a waiting call that gets no decision
	// by then fails with 4003 "approval expired" (one whose own deadline is nearer fails at
	// its deadline instead), and an asynchronous approval expires undecided.
	Timeout time.Duration `yaml:"timeout" json:"timeout,omitempty"`
	// Mode is how a call that needs approval is answered when it does not choose
	// (params.approval_mode): ModeWait holds it until the decision, ModeAsync answers at once
	// with 4004 APPROVAL_PENDING and an approval_id the caller redeems later.
	Mode string `yaml:"mode" json:"mode,omitempty"`
	// MaxWait is the longest a waiting call is held (default: Timeout); past it the call
	// fails with 4003 "approval expired" and its approval expires.
	MaxWait time.Duration `yaml:"max_wait" json:"max_wait,omitempty"`
	// ResultTTL is how long an approved asynchronous call can still be redeemed after its
	// decision, and how long the outcome of a redeemed call is kept for redeeming it again.
	ResultTTL time.Duration `yaml:"result_ttl" json:"result_ttl,omitempty"`
	// RetryAfter is the retry_after_ms hint of a 4004 answer: how soon a caller should
	// redeem again.
	RetryAfter time.Duration `yaml:"retry_after" json:"retry_after,omitempty"`
	// MaxPending bounds the approvals pending at once, across every replica sharing the
	// state store; past it a call that needs approval is refused with 5002 OVERLOADED.
	MaxPending int `yaml:"max_pending" json:"max_pending,omitempty"`
	// PollInterval is how often a waiting call reads its record in the state store to learn
	// the decision, which any replica may have written.
	PollInterval time.Duration `yaml:"poll_interval" json:"poll_interval,omitempty"`
	// AdminScope is the scope a caller of admin.approvals.* must hold.
	AdminScope string `yaml:"admin_scope" json:"admin_scope,omitempty"`
	// AuditTTL is how long an audit record of a decision is kept in the state store.
	AuditTTL time.Duration `yaml:"audit_ttl" json:"audit_ttl,omitempty"`
}

// Defaults of the approvals section.
const (
	DefaultTimeout      = 5 * time.Minute
	DefaultMode         = ModeWait
	DefaultResultTTL    = 15 * time.Minute
	DefaultRetryAfter   = 5 * time.Second
	DefaultMaxPending   = 1000
	DefaultPollInterval = 250 * time.Millisecond
	DefaultAdminScope   = "admin.approvals"
	DefaultAuditTTL     = 30 * 24 * time.Hour
	// MaxMaxPending bounds approvals.max_pending so the index of pending approvals stays
	// well inside the state store's value limit.
	MaxMaxPending = 10000
)

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	setDefault(&c.Timeout, DefaultTimeout)
	setDefault(&c.Mode, DefaultMode)
	setDefault(&c.MaxWait, c.Timeout)
	setDefault(&c.ResultTTL, DefaultResultTTL)
	setDefault(&c.RetryAfter, DefaultRetryAfter)
	setDefault(&c.MaxPending, DefaultMaxPending)
	setDefault(&c.PollInterval, DefaultPollInterval)
	setDefault(&c.AdminScope, DefaultAdminScope)
	setDefault(&c.AuditTTL, DefaultAuditTTL)
	return c
}

func setDefault[T comparable](p *T, def T) {
	var zero T
	if *p == zero {
		*p = def
	}
}

// ConfigError is a problem of the section, at a path relative to it ("poll_interval").
type ConfigError struct {
	Path string
	Msg  string
}

// Error implements error.
func (e ConfigError) Error() string { return e.Path + ": " + e.Msg }

// Validate reports the settings of c (with its defaults applied) that the schema cannot
// check.
func (c Config) Validate() []ConfigError {
	var errs []ConfigError
	if c.PollInterval >= min(c.Timeout, c.MaxWait) {
		errs = append(errs, ConfigError{Path: "poll_interval",
			Msg: fmt.Sprintf("poll_interval (%s) must be shorter than timeout (%s) and max_wait (%s)", c.PollInterval, c.Timeout, c.MaxWait)})
	}
	if c.Mode != ModeWait && c.Mode != ModeAsync {
		errs = append(errs, ConfigError{Path: "mode", Msg: fmt.Sprintf("mode is %q: it must be wait or async", c.Mode)})
	}
	if c.MaxWait > c.Timeout {
		errs = append(errs, ConfigError{Path: "max_wait",
			Msg: fmt.Sprintf("max_wait (%s) must not be longer than timeout (%s)", c.MaxWait, c.Timeout)})
	}
	if c.MaxPending < 1 || c.MaxPending > MaxMaxPending {
		errs = append(errs, ConfigError{Path: "max_pending",
			Msg: fmt.Sprintf("max_pending is %d: it must be between 1 and %d", c.MaxPending, MaxMaxPending)})
	}
	return errs
}
