package conformance_test

import (
	"reflect"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/conformance"
)

func TestParseScenarioList(t *testing.T) {
	tests := []struct {
		name, in string
		want     []conformance.ScenarioEntry
	}{
		{"none", "Server scenarios (test against a server):\n", nil},
		{"tags", "Server scenarios:\n  - ping [2025-06-18,2025-11-25]\n  - caching [2026-07-28]\n",
			[]conformance.ScenarioEntry{{Name: "ping", Tags: []string{"2025-06-18", "2025-11-25"}}, {Name: "caching", Tags: []string{"2026-07-28"}}}},
		{"no tags", "  - server-initialize\n", []conformance.ScenarioEntry{{Name: "server-initialize"}}},
		{"other tags and spaces", "  - tasks-lifecycle [ extension ]\n  - x [a, ,b]\n",
			[]conformance.ScenarioEntry{{Name: "tasks-lifecycle", Tags: []string{"extension"}}, {Name: "x", Tags: []string{"a", "b"}}}},
		{"not a scenario line", "Requirement sets available: 2025-11-25\n-nospace\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := conformance.ParseScenarioList(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
