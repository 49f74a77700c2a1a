package server

import (
	"time"

	"github.com/gatehouse-dev/gatehouse/server/config"
)

// ApprovalsConfig is the approvals section: how calls the policy marks as needing a human's
// approval are held (approvalstage.go), decided on the admin listener (approvaladmin.go),
// and audited. The approval stage is in the chain whenever the policy stage is, with these
// defaults when the section is absent: a call that needs approval is never let through
// unapproved.
type ApprovalsConfig struct {
	// Timeout is how long a call waits for a decision before it fails with 4003 "approval
	// expired"; a call whose own deadline is nearer fails at its deadline instead.
	Timeout time.Duration `yaml:"timeout" json:"timeout,omitempty"`
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
	DefaultApprovalTimeout      = 5 * time.Minute
	DefaultApprovalMaxPending   = 1000
	DefaultApprovalPollInterval = 250 * time.Millisecond
	DefaultApprovalAdminScope   = "admin.approvals"
	DefaultApprovalAuditTTL     = 30 * 24 * time.Hour
	// MaxApprovalMaxPending bounds approvals.max_pending so the index of pending approvals
	// stays well inside the state store's value limit.
	MaxApprovalMaxPending = 10000
)

// withDefaults returns c with every zero field set to its default.
func (c ApprovalsConfig) withDefaults() ApprovalsConfig {
	setDefault(&c.Timeout, DefaultApprovalTimeout)
	setDefault(&c.MaxPending, DefaultApprovalMaxPending)
	setDefault(&c.PollInterval, DefaultApprovalPollInterval)
	setDefault(&c.AdminScope, DefaultApprovalAdminScope)
	setDefault(&c.AuditTTL, DefaultApprovalAuditTTL)
	return c
}

// validate reports the settings the schema cannot check, as errors at their paths.
func (c ApprovalsConfig) validate(doc *config.Document) config.ErrorList {
	var errs config.ErrorList
	if c.PollInterval >= c.Timeout {
		errs = append(errs, doc.Errorf("approvals.poll_interval",
			"poll_interval (%s) must be shorter than timeout (%s)", c.PollInterval, c.Timeout))
	}
	if c.MaxPending < 1 || c.MaxPending > MaxApprovalMaxPending {
		errs = append(errs, doc.Errorf("approvals.max_pending",
			"max_pending is %d: it must be between 1 and %d", c.MaxPending, MaxApprovalMaxPending))
	}
	return errs
}
