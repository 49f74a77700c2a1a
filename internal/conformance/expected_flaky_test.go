package conformance

import (
	"strings"
	"testing"
)

func TestFlakyEntriesAcceptEitherOutcome(t *testing.T) {
	expected, err := ParseExpected(strings.NewReader("a # flaky: upstream bug\nb # always fails\n"))
	if err != nil {
		t.Fatal(err)
	}
	pass := Result{Scenario: "a", Checks: []Check{{Status: "SUCCESS"}}}
	fail := Result{Scenario: "a", Checks: []Check{{Status: "FAILURE"}}}
	for _, r := range []Result{pass, fail} {
		if v := Compare([]Result{r}, expected, []string{"a", "b"}); !v.OK() {
			t.Errorf("flaky scenario with outcome passed=%v judged %+v", r.Passed(), v)
		}
	}
	if v := Compare([]Result{{Scenario: "b", Checks: []Check{{Status: "SUCCESS"}}}}, expected, []string{"a", "b"}); v.OK() || len(v.Stale) != 1 {
		t.Errorf("a listed non-flaky scenario that passes must be stale: %+v", v)
	}
}
