package server

import (
	"log/slog"
	"sort"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/routing"
)

// admissionChainStage returns the admission stage of the configuration, nil without an
// admission section. Backends are named as the breakers name them (backendOf): a gRPC
// backend by its name, an MCP server as mcp/NAME, an embedder's target by its name; calls
// to the NEKTE service and the demo target run in the process and pass the global limit
// only. Limits under admission.backends that name no backend are logged as a warning,
// since they apply to nothing (a misspelt name leaves its backend on the defaults); they
// are not refused, because an embedder's targets are only known once the table is built.
// The admission control is kept in c for the metrics (queue depths and the global limit at
// scrape time); each admitted call's wait is observed in m.
func (c *Config) admissionChainStage(table *routing.Table, now func() time.Time, log *slog.Logger, m *observability.Metrics) gateway.Middleware {
	if c.Admission == nil {
		c.admission = nil
		return nil
	}
	if unknown := c.unknownAdmissionBackends(table); len(unknown) > 0 {
		log.Warn("admission.backends names no backend; its limits apply to nothing", "names", unknown)
	}
	var onWait func(string, time.Duration)
	if m != nil {
		onWait = m.QueueWaited
	}
	c.admission = resilience.NewAdmission(c.Admission, backendOf, now, log, onWait)
	return c.admission.Middleware()
}

// unknownAdmissionBackends returns the names under admission.backends that name no backend
// of the configuration or the table, sorted.
func (c *Config) unknownAdmissionBackends(table *routing.Table) []string {
	known := c.backendNames()
	for _, t := range table.Targets() {
		if name := backendOf(&gateway.Call{Target: t}); name != "" {
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
