package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gatehouse-dev/gatehouse/server"
)

// printEnforcement writes what `gatehouse validate` says of a configuration's enforcement:
// whether breakers, admission control and retries are on, and with which limits (every
// default filled in), so an operator sees at a glance what a shipped or edited file enforces.
func printEnforcement(w io.Writer, cfg *server.Config) {
	if b := cfg.Breakers; b != nil {
		s := b.For("")
		fmt.Fprintf(w, "  breakers: on (opens at %g of ≥%d judged calls in %s, open %s, %d half-open probes%s)\n",
			s.FailureRatio, s.MinRequests, s.Window, s.OpenDuration, s.HalfOpenProbes, overridden(b.Backends))
	} else {
		fmt.Fprintln(w, "  breakers: off (no breakers section)")
	}
	if a := cfg.Admission; a != nil {
		d := a.WithDefaults()
		global := "off"
		if g := d.Global; g.Enabled == nil || *g.Enabled {
			global = fmt.Sprintf("adaptive, starts %d, between %d and %d", g.InitialLimit, g.MinLimit, g.MaxLimit)
		}
		fmt.Fprintf(w, "  admission: on (global %s; per backend %d at once, queue %d, max wait %s%s)\n",
			global, d.Default.MaxConcurrency, d.Default.Queue, d.Default.MaxWait, overridden(a.Backends))
	} else {
		fmt.Fprintln(w, "  admission: off (no admission section)")
	}
	if r := cfg.Retries; r != nil {
		d := r.WithDefaults()
		fmt.Fprintf(w, "  retries: on (at most one, budget %g of a backend's calls per %s, at least %d; back-off %s)\n",
			d.Budget.Ratio, d.Budget.Window, d.Budget.MinRetries, d.Backoff)
	} else {
		fmt.Fprintln(w, "  retries: off (no retries section)")
	}
}

// overridden names the backends a section overrides, for the summary line.
func overridden[T any](backends map[string]T) string {
	if len(backends) == 0 {
		return ""
	}
	names := make([]string, 0, len(backends))
	for n := range backends {
		names = append(names, n)
	}
	sort.Strings(names)
	return "; own settings: " + strings.Join(names, ", ")
}
