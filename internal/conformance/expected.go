package conformance

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"
)

// Expected maps each scenario expected to fail to the reason it fails. A reason that
// starts with "flaky:" marks a scenario known to fail only sometimes (for a cause outside
// this repository, named in the reason): either outcome is accepted.
type Expected map[string]string

// flakyPrefix starts the reason of a scenario that may pass or fail.
const flakyPrefix = "flaky:"

// Flaky reports whether scenario is listed as failing only sometimes.
func (e Expected) Flaky(scenario string) bool {
	return strings.HasPrefix(e[scenario], flakyPrefix)
}

// ParseExpected reads an expected-failures file: one scenario per line followed by '#'
// and the reason, which is required. Blank lines and lines starting with '#' are ignored;
// a scenario listed twice is an error.
func ParseExpected(r io.Reader) (Expected, error) {
	expected := Expected{}
	scanner := bufio.NewScanner(r)
	for n := 1; scanner.Scan(); n++ {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		scenario, reason, _ := strings.Cut(line, "#")
		scenario, reason = strings.TrimSpace(scenario), strings.TrimSpace(reason)
		switch {
		case strings.ContainsFunc(scenario, unicode.IsSpace):
			return nil, fmt.Errorf("expected failures, line %d: %q is not one scenario name", n, scenario)
		case reason == "":
			return nil, fmt.Errorf("expected failures, line %d: %s has no reason after '#'", n, scenario)
		}
		if _, dup := expected[scenario]; dup {
			return nil, fmt.Errorf("expected failures, line %d: %s is listed twice", n, scenario)
		}
		expected[scenario] = reason
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("reading expected failures: %w", err)
	}
	return expected, nil
}

// Verdict holds the results against the expected failures.
type Verdict struct {
	// Passed and Failed list the scenarios run, by outcome.
	Passed, Failed []string
	// Unexpected are failures the file does not list.
	Unexpected []string
	// Stale are listed scenarios that passed: the file must drop them.
	Stale []string
	// Unknown are listed names that are no scenario of the suite.
	Unknown []string
}

// OK reports whether every failure was expected and the file is accurate.
func (v Verdict) OK() bool {
	return len(v.Unexpected) == 0 && len(v.Stale) == 0 && len(v.Unknown) == 0
}

// Compare judges results against expected. known lists every scenario of the suite, so
// that entries for scenarios not run this time are neither stale nor unknown.
func Compare(results []Result, expected Expected, known []string) Verdict {
	var v Verdict
	for _, r := range results {
		_, listed := expected[r.Scenario]
		switch {
		case r.Passed() && listed && expected.Flaky(r.Scenario):
			v.Passed = append(v.Passed, r.Scenario)
		case r.Passed() && listed:
			v.Passed = append(v.Passed, r.Scenario)
			v.Stale = append(v.Stale, r.Scenario)
		case r.Passed():
			v.Passed = append(v.Passed, r.Scenario)
		case listed:
			v.Failed = append(v.Failed, r.Scenario)
		default:
			v.Failed = append(v.Failed, r.Scenario)
			v.Unexpected = append(v.Unexpected, r.Scenario)
		}
	}
	for scenario := range expected {
		if !slices.Contains(known, scenario) {
			v.Unknown = append(v.Unknown, scenario)
		}
	}
	slices.Sort(v.Unknown)
	return v
}
