package server

import (
	"errors"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/configs/loader"
)

// TestAdmissionUnknownBackendWarns: limits for a name no backend has are reported when the
// configuration is built; names of configured or embedded backends are not.
func TestAdmissionUnknownBackendWarns(t *testing.T) {
	ts := start(t, baseConfig+`
admission:
  backends:
    probe: {max_concurrency: 2}
    calculatr: {max_concurrency: 2}
`, probes{"work": &probe{}}.asTargets())
	logs := ts.logs.String()
	if !strings.Contains(logs, `admission.backends names no backend`) || !strings.Contains(logs, "names=[calculatr]") {
		t.Fatalf("no warning naming only calculatr in:\n%s", logs)
	}
}

// TestAdmissionConfigErrors: the schema and the section's own checks both report at the
// offending key's line.
func TestAdmissionConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"queue below 1", "admission:\n  default: {queue: 0}\n", []string{"test.yaml:2:"}},
		{"unknown key", "admission:\n  backends:\n    calc: {max_concurency: 2}\n", []string{"test.yaml:3:", "max_concurency"}},
		{"unknown baseline", "admission:\n  global: {baseline: median}\n", []string{"test.yaml:2:"}},
		{"max_wait not past throttle", "admission:\n  backends:\n    calc:\n      throttle: 1s\n      max_wait: 1s\n",
			[]string{"test.yaml:5:", "admission.backends.calc.max_wait", "must be longer than throttle"}},
		{"initial past max", "admission:\n  global: {initial_limit: 50, max_limit: 20}\n", []string{"admission.global.initial_limit"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("test.yaml", []byte(tt.yaml))
			if _, ok := errors.AsType[loader.ErrorList](err); !ok {
				t.Fatalf("got %v, want a loader.ErrorList", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	cfg, err := Parse("test.yaml", []byte("admission: {}\n"))
	if err != nil || cfg.Admission == nil {
		t.Fatalf("an empty section: %v", err)
	}
}
