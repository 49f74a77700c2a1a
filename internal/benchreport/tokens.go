package main

import (
	"fmt"
	"slices"
	"strings"
)

// tokensBench is the benchmark that reports NEKTE's token figures (offline cl100k counts
// of discover results and of MCP tools/list for the same tools).
const tokensBench = "routing/capability.BenchmarkDiscoverTokens"

// tokensCatalog says which tools the token figures are counted on.
const tokensCatalog = "the tools of server-everything + server-filesystem + server-memory, cl100k"

// metricRatio is a figure a benchmark computes as a ratio itself and reports with
// b.ReportMetric in unit; the report takes its median over the rounds.
type metricRatio struct {
	title, bench, unit, meaning string
}

// absoluteUnits are the units of metrics that are figures, not ratios (bytes, counts): the
// report prints them as whole numbers followed by the unit, and leaves them out of the plot
// of ratios.
var absoluteUnits = map[string]bool{"B/idle-conn": true, "B/idle-session": true, "RSS-B/idle-session": true,
	"added-p50-µs": true, "added-p99-µs": true}

// tokenRatios are the token figures that are ratios: a whole discover result ÷ the
// tools/list result of the same tools.
var tokenRatios = []metricRatio{
	{"NEKTE discover L0 tokens ÷ MCP tools/list tokens (" + tokensCatalog + ")", tokensBench, "L0/tools-list", "aim ≤ 0.12"},
	{"NEKTE discover L0, compact shape, tokens ÷ MCP tools/list tokens", tokensBench, "compact/tools-list", ""},
	{"NEKTE discover L1 tokens ÷ MCP tools/list tokens", tokensBench, "L1/tools-list", ""},
	{"NEKTE discover L2 tokens ÷ MCP tools/list tokens", tokensBench, "L2/tools-list",
		"below 1.0: the full schemas, compacted, cost less than tools/list"},
}

// metricRatios returns the rows of the ratios benchmarks report themselves: the token
// figures, then metricDefs.
func metricRatios(res *results) []ratioRow {
	rows := make([]ratioRow, 0, len(tokenRatios)+len(metricDefs))
	for _, m := range slices.Concat(tokenRatios, metricDefs) {
		row := ratioRow{def: ratioDef{title: m.title, num: m.bench, meaning: m.meaning}, unit: m.unit, absolute: absoluteUnits[m.unit]}
		if v := res.samples[m.bench][m.unit]; len(v) > 0 {
			row.ok, row.value = true, median(v)
		}
		rows = append(rows, row)
	}
	return rows
}

// tokenCount is one per-capability token figure.
type tokenCount struct {
	title, unit, meaning string
}

var tokenCounts = []tokenCount{
	{"MCP tools/list", "tools-list-tok/cap", "the baseline"},
	{"nekte.discover L0 (standard shape)", "L0-tok/cap", ""},
	{"nekte.discover L0, compact shape", "compact-tok/cap", "aim ≤ 8"},
	{"nekte.discover L1", "L1-tok/cap", ""},
	{"nekte.discover L2", "L2-tok/cap", ""},
}

// tokenSection writes the table of tokens per capability, or nothing when the token
// benchmark did not run.
func tokenSection(res *results) string {
	s := res.samples[tokensBench]
	if s == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## NEKTE tokens per capability\n\nCounted offline (%s); the same catalog for every row.\n\n", tokensCatalog)
	b.WriteString("| result | tokens per capability | reading |\n|---|---:|---|\n")
	for _, c := range tokenCounts {
		v := "not measured"
		if vals := s[c.unit]; len(vals) > 0 {
			v = fmt.Sprintf("%.1f", median(vals))
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", c.title, v, c.meaning)
	}
	return b.String()
}
