package server

import (
	"reflect"
	"sort"

	"github.com/gatehouse-dev/gatehouse/auth/policy"
	"github.com/gatehouse-dev/gatehouse/configs/loader"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
)

// The resilience stages (resilience/) as this configuration assembles them: what the
// stages ask of the policy and of the routing section, and the checks of their sections
// that need the whole file.

// retryOptions are the retry stage's options: a call's mutation class is the policy's
// (policy.Repeatable), and a retry needs more than 2ε (deadline.min_remaining) left.
func (c *Config) retryOptions() resilience.RetryOptions {
	return resilience.RetryOptions{Repeatable: policy.Repeatable, MinRemaining: c.Deadline.WithDefaults().MinRemaining}
}

// newAdmission returns the admission control of p's configuration, nil without an
// admission section — the replaced runtime's, with its state, when the section did not
// change; each admitted call's wait is observed in p.m. Limits under
// admission.backends that name no backend are logged as a warning, since they apply to
// nothing (a misspelt name leaves its backend on the defaults); they are not refused,
// because an embedder's targets are only known once the table is built.
func newAdmission(p pipelineParams) *resilience.AdmissionControl {
	if p.cfg.Admission == nil {
		return nil
	}
	// An unchanged section keeps the serving runtime's admission control: the calls it
	// admitted still hold their places, and the adaptive limit keeps what it learnt.
	if prev := p.prev; prev != nil && prev.admission != nil && reflect.DeepEqual(p.cfg.Admission, prev.cfg.Admission) {
		return prev.admission
	}
	if unknown := p.cfg.unknownAdmissionBackends(p.table.Targets()); len(unknown) > 0 {
		p.log.Warn("admission.backends names no backend; its limits apply to nothing", "names", unknown)
	}
	deps := resilience.AdmissionDeps{Now: p.now, Log: p.log}
	if p.m != nil {
		deps.OnWait = p.m.QueueWaited
	}
	return resilience.NewAdmission(p.cfg.Admission, deps)
}

// unknownAdmissionBackends returns the names under admission.backends that name no backend
// of the configuration or of targets, sorted.
func (c *Config) unknownAdmissionBackends(targets []gateway.Target) []string {
	known := c.Routing.BackendNames()
	for _, t := range targets {
		if name := gateway.BackendOf(&gateway.Call{Target: t}); name != "" {
			known[name] = true
		}
	}
	var unknown []string
	for name := range c.Admission.Backends {
		if !known[name] {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	return unknown
}

// validateResilience reports the problems of the resilience sections at their paths,
// among them a breakers.backends entry that names no backend of the routing section (a
// typo would otherwise leave a backend on the defaults unnoticed).
func (c *Config) validateResilience(doc *loader.Document) loader.ErrorList {
	var errs loader.ErrorList
	if c.RateLimits != nil {
		errs = append(errs, sectionErrors(doc, "rate_limits", c.RateLimits.Validate())...)
	}
	if c.Idempotency != nil {
		errs = append(errs, sectionErrors(doc, "idempotency", c.Idempotency.Validate())...)
	}
	if c.Breakers != nil {
		errs = append(errs, sectionErrors(doc, "breakers", c.Breakers.Validate())...)
		errs = append(errs, c.unknownBreakerBackends(doc)...)
	}
	if c.Retries != nil {
		errs = append(errs, sectionErrors(doc, "retries", c.Retries.Validate())...)
	}
	if c.Admission != nil {
		errs = append(errs, sectionErrors(doc, "admission", c.Admission.WithDefaults().Validate())...)
	}
	return errs
}

// unknownBreakerBackends reports the breakers.backends entries that name no backend.
func (c *Config) unknownBreakerBackends(doc *loader.Document) loader.ErrorList {
	var errs loader.ErrorList
	known := c.Routing.BackendNames()
	for name := range c.Breakers.Backends {
		if name != "" && !known[name] {
			errs = append(errs, doc.Errorf("breakers."+resilience.BackendPath(name),
				"%q is not a backend: name a gRPC backend of routing.grpc, or an MCP server of routing.mcp.servers as %q", name, mcpbackend.BackendPrefix+"NAME"))
		}
	}
	return errs
}
