package server

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

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

// TestAdmissionCarriedOverReload: a reload that leaves the admission section unchanged
// keeps its state — a call admitted before the reload still holds its backend's place, so
// a call after it waits instead of running beside it; a changed section starts anew.
func TestAdmissionCarriedOverReload(t *testing.T) {
	const admissionYAML = `
admission:
  backends:
    probe: {max_concurrency: 1, queue: 4, max_wait: 5s}
`
	p := &probe{delay: 400 * time.Millisecond, started: make(chan string, 4)}
	ts := start(t, baseConfig+admissionYAML, probes{"work": p}.asTargets())
	reload := func(yaml string) {
		t.Helper()
		cfg, err := Parse("test.yaml", []byte(baseConfig+yaml))
		if err != nil {
			t.Fatal(err)
		}
		if err := ts.Reload(cfg); err != nil {
			t.Fatal(err)
		}
	}
	call := func(id int, done chan<- string) {
		_, _, body := ts.post(fmt.Sprintf(`{"jsonrpc":"2.0","method":"work","id":%d}`, id))
		done <- body
	}
	done := make(chan string, 2)
	go call(1, done)
	<-p.started // call 1 holds the probe's only place
	kept := ts.cur.Load().admission
	reload(admissionYAML)
	if ts.cur.Load().admission != kept {
		t.Fatal("an unchanged admission section was built anew on reload")
	}
	go call(2, done)
	for range 2 {
		if body := <-done; !strings.Contains(body, `"result"`) {
			t.Fatalf("a call failed: %s", body)
		}
	}
	if n := p.maxRunning.Load(); n != 1 {
		t.Fatalf("%d calls ran at once across an unchanged reload, want 1 (the admission state carried over)", n)
	}
	// A changed section is a new admission control: the limit it sets starts from nothing.
	reload(strings.Replace(admissionYAML, "queue: 4", "queue: 5", 1))
	if a := ts.cur.Load().admission; a == nil || a == kept {
		t.Fatal("a changed admission section kept the old admission control")
	}
}
