package conformance

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteReport writes one row per scenario (outcome, check counts, and the reason or the
// problems of a failure), the summary line "N passed, N failed", and what makes the
// verdict fail, if anything.
func WriteReport(w io.Writer, results []Result, expected Expected, v Verdict) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tRESULT\tCHECKS\tNOTE")
	for _, r := range results {
		outcome, note := "pass", ""
		reason, listed := expected[r.Scenario]
		switch {
		case !r.Passed() && listed:
			outcome, note = "FAIL", "expected: "+reason
		case !r.Passed():
			outcome, note = "FAIL", strings.Join(r.Problems(), "; ")
		case listed:
			note = "listed as expected failure but passed"
		case r.Count(StatusSuccess) == 0:
			note = "nothing to verify: INFO checks only"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Scenario, outcome, counts(r), note)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	fmt.Fprintf(w, "%d passed, %d failed\n", len(v.Passed), len(v.Failed))
	for _, line := range []struct {
		what  string
		names []string
	}{
		{"unexpected failures", v.Unexpected},
		{"expected failures that now pass (remove them from the file)", v.Stale},
		{"unknown scenarios in the expected-failures file", v.Unknown},
	} {
		if len(line.names) > 0 {
			fmt.Fprintf(w, "%s: %s\n", line.what, strings.Join(line.names, ", "))
		}
	}
	return nil
}

// counts summarises a scenario's checks: "2 ok, 1 failed, 1 warning, 3 info".
func counts(r Result) string {
	var parts []string
	for _, c := range []struct{ status, label string }{
		{StatusSuccess, "ok"}, {StatusFailure, "failed"}, {StatusWarning, "warning"}, {StatusInfo, "info"},
	} {
		if n := r.Count(c.status); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, c.label))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
