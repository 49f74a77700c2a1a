package resilience_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// admTarget is a target whose calls behave as their method says: "ok" answers at once,
// "block" answers once unblock is closed (or its context ends), "fail" fails, "stream"
// answers with a stream, "panic" panics.
type admTarget struct {
	name    string
	unblock chan struct{}
	entered chan struct{} // receives once per "block" call that started, if not nil
}

func (a *admTarget) Name() string { return a.name }

func (a *admTarget) Invoke(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
	switch call.Method {
	case "block":
		if a.entered != nil {
			a.entered <- struct{}{}
		}
		select {
		case <-a.unblock:
		case <-ctx.Done():
			return nil, gateway.AsError(ctx.Err())
		}
	case "fail":
		return nil, gateway.NewError(schemas.CodeUnavailable)
	case "stream":
		return &gateway.Result{Stream: &admStream{}}, nil
	case "panic":
		panic("target panicked") // the stage must give the places back when a call panics
	}
	return gateway.NewResult([]byte(`"ok"`)), nil
}

type admStream struct{}

func (*admStream) Recv(context.Context) ([]byte, error) { return nil, io.EOF }
func (*admStream) Close() error                         { return nil }

// admHandler is the admission stage of cfg in front of dispatch.
func admHandler(cfg *resilience.AdmissionConfig, log *slog.Logger) gateway.Handler {
	return gateway.Chain(func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
		return call.Target.Invoke(ctx, call)
	}, resilience.Admission(cfg, nil, time.Now, log))
}

func admCall(method string, target gateway.Target, zone gateway.TrustZone) *gateway.Call {
	return &gateway.Call{Method: method, Target: target, Zone: zone}
}

// runSafely runs a call, turning a panic into an error.
func runSafely(h gateway.Handler, call *gateway.Call) (res *gateway.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = errors.New("panicked")
		}
	}()
	return h(context.Background(), call)
}

func wantOverloaded(t *testing.T, err error, reason string) {
	t.Helper()
	var ge *gateway.Error
	if !errors.As(err, &ge) || ge.Code() != schemas.CodeOverloaded {
		t.Fatalf("got %v, want OVERLOADED", err)
	}
	d := ge.Data()
	if d["reason"] != reason || d["recovery_hint"] != "RETRY_WITH_BACKOFF" {
		t.Errorf("data %v, want reason %s and a recovery hint", d, reason)
	}
	if ms, ok := d["retry_after_ms"].(int64); !ok || ms < 1 {
		t.Errorf("retry_after_ms %v, want ≥ 1", d["retry_after_ms"])
	}
}

// globalOfOne is an admission section whose global limit is one call, with generous
// per-target limits.
func globalOfOne() *resilience.AdmissionConfig {
	return &resilience.AdmissionConfig{Global: resilience.AdaptiveConfig{InitialLimit: 1, MinLimit: 1, MaxLimit: 1}}
}

// TestAdmissionOperatorZoneBypassesGlobal: with the global limit taken, calls of every zone
// but operator are shed; operator calls are admitted.
func TestAdmissionOperatorZoneBypassesGlobal(t *testing.T) {
	tgt := &admTarget{name: "t", unblock: make(chan struct{}), entered: make(chan struct{}, 1)}
	h := admHandler(globalOfOne(), nil)
	done := make(chan error, 1)
	go func() {
		_, err := h(context.Background(), admCall("block", tgt, gateway.ZoneExternal))
		done <- err
	}()
	<-tgt.entered
	tests := []struct {
		zone  gateway.TrustZone
		admit bool
	}{
		{gateway.ZoneExternal, false},
		{gateway.ZoneInternal, false},
		{gateway.ZoneLocal, false},
		{gateway.ZoneOperator, true},
	}
	for _, tt := range tests {
		t.Run(tt.zone.String(), func(t *testing.T) {
			_, err := h(context.Background(), admCall("ok", tgt, tt.zone))
			if tt.admit {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			wantOverloaded(t, err, "global_limit")
		})
	}
	close(tgt.unblock)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestAdmissionGivesPlacesBack: whatever a call's outcome, its places are given back, so a
// global limit of one admits the next call.
func TestAdmissionGivesPlacesBack(t *testing.T) {
	tgt := &admTarget{name: "t"}
	for _, method := range []string{"ok", "fail", "panic"} {
		t.Run(method, func(t *testing.T) {
			h := admHandler(globalOfOne(), nil)
			if _, err := runSafely(h, admCall(method, tgt, gateway.ZoneExternal)); err == nil && method != "ok" {
				t.Fatal("the call did not fail")
			}
			for range 3 {
				if _, err := h(context.Background(), admCall("ok", tgt, gateway.ZoneExternal)); err != nil {
					t.Fatalf("the next call was refused: %v", err)
				}
			}
		})
	}
}

// TestAdmissionStreamedResult: a streamed result gives its global place back when it
// starts and its backend's place when it ends.
func TestAdmissionStreamedResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := globalOfOne()
		cfg.Backends = map[string]resilience.TargetLimits{"t": {MaxConcurrency: 1, Queue: 1, Throttle: time.Millisecond, MaxWait: 10 * time.Millisecond}}
		h := admHandler(cfg, nil)
		tgt, other := &admTarget{name: "t"}, &admTarget{name: "u"}
		res, err := h(context.Background(), admCall("stream", tgt, gateway.ZoneExternal))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h(context.Background(), admCall("ok", other, gateway.ZoneExternal)); err != nil {
			t.Errorf("the open stream holds the global place: %v", err)
		}
		_, err = h(context.Background(), admCall("ok", tgt, gateway.ZoneExternal))
		wantOverloaded(t, err, "queue_timeout") // its backend's place is the stream's
		_ = res.Stream.Close()
		_ = res.Stream.Close() // closing twice gives back once
		for range 3 {
			if _, err := h(context.Background(), admCall("ok", tgt, gateway.ZoneExternal)); err != nil {
				t.Fatalf("after the stream ended: %v", err)
			}
		}
	})
}

// TestAdmissionPerTarget: each target has its own places and queue, with the limits of
// its name; a full target does not hold up another.
func TestAdmissionPerTarget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := &resilience.AdmissionConfig{
			Global:   resilience.AdaptiveConfig{Enabled: new(false)},
			Backends: map[string]resilience.TargetLimits{"small": {MaxConcurrency: 1, Queue: 1}},
		}
		h := admHandler(cfg, nil)
		small := &admTarget{name: "small", unblock: make(chan struct{})}
		other := &admTarget{name: "other"}
		var wg sync.WaitGroup
		for range 3 { // one running, one queued, one held (the queue is 2·Q_max long)
			wg.Go(func() {
				if _, err := h(context.Background(), admCall("block", small, gateway.ZoneExternal)); err != nil {
					t.Errorf("a call within the queue: %v", err)
				}
			})
			synctest.Wait()
		}
		_, err := h(context.Background(), admCall("block", small, gateway.ZoneExternal))
		wantOverloaded(t, err, "queue_full")
		if _, err := h(context.Background(), admCall("ok", other, gateway.ZoneExternal)); err != nil {
			t.Errorf("another target was held up: %v", err)
		}
		close(small.unblock)
		wg.Wait()
	})
}

// TestAdmissionBackendOf: calls wait in the queue of the backend backendOf names — several
// targets may share one — and a call it names "" passes the global limit only.
func TestAdmissionBackendOf(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := &resilience.AdmissionConfig{Backends: map[string]resilience.TargetLimits{"shared": {MaxConcurrency: 1, Queue: 1}}}
		backendOf := func(call *gateway.Call) string {
			if call.Target.Name() == "inproc" {
				return ""
			}
			return "shared"
		}
		h := gateway.Chain(func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
			return call.Target.Invoke(ctx, call)
		}, resilience.Admission(cfg, backendOf, time.Now, nil))
		a := &admTarget{name: "a", unblock: make(chan struct{})}
		var wg sync.WaitGroup
		for range 3 { // running, queued, held: the shared queue is full
			wg.Go(func() { _, _ = h(context.Background(), admCall("block", a, gateway.ZoneExternal)) })
			synctest.Wait()
		}
		_, err := h(context.Background(), admCall("ok", &admTarget{name: "b"}, gateway.ZoneExternal))
		wantOverloaded(t, err, "queue_full")
		if _, err := h(context.Background(), admCall("ok", &admTarget{name: "inproc"}, gateway.ZoneExternal)); err != nil {
			t.Errorf("an in-process call waited for a backend: %v", err)
		}
		close(a.unblock)
		wg.Wait()
	})
}

// TestAdmissionNilConfig: no section, no stage.
func TestAdmissionNilConfig(t *testing.T) {
	if resilience.Admission(nil, nil, time.Now, nil) != nil {
		t.Fatal("a stage without a config section")
	}
}

// TestAdmissionShedLog: refusals are summed up in at most one log line per interval.
func TestAdmissionShedLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&buf, nil))
		h := admHandler(globalOfOne(), log)
		tgt := &admTarget{name: "t", unblock: make(chan struct{})}
		go func() { _, _ = h(context.Background(), admCall("block", tgt, gateway.ZoneExternal)) }()
		synctest.Wait()
		for range 5 {
			_, _ = h(context.Background(), admCall("ok", tgt, gateway.ZoneExternal))
		}
		time.Sleep(10 * time.Second)
		_, _ = h(context.Background(), admCall("ok", tgt, gateway.ZoneExternal))
		close(tgt.unblock)
		synctest.Wait()
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if len(lines) != 2 || !strings.Contains(lines[0], "global_limit=1 queue_full=0") || !strings.Contains(lines[1], "global_limit=5 queue_full=0") ||
			!strings.Contains(lines[1], "adaptive_limit=1 adaptive_inflight=1") {
			t.Fatalf("log:\n%s\nwant two summaries: the first refusal, then the 5 that followed", buf.String())
		}
	})
}

// TestAdmissionConfigDefaults: a backend's unset limits are Default's, Default's unset
// ones the built-in defaults.
func TestAdmissionConfigDefaults(t *testing.T) {
	cfg := resilience.AdmissionConfig{
		Default:  resilience.TargetLimits{Queue: 5},
		Backends: map[string]resilience.TargetLimits{"calc": {MaxConcurrency: 3}},
	}.WithDefaults()
	tests := []struct {
		name string
		want resilience.TargetLimits
	}{
		{"calc", resilience.TargetLimits{MaxConcurrency: 3, Queue: 5, Throttle: resilience.DefaultAdmissionThrottle, MaxWait: resilience.DefaultAdmissionMaxWait}},
		{"other", resilience.TargetLimits{MaxConcurrency: resilience.DefaultAdmissionMaxConcurrency, Queue: 5,
			Throttle: resilience.DefaultAdmissionThrottle, MaxWait: resilience.DefaultAdmissionMaxWait}},
	}
	for _, tt := range tests {
		if got := cfg.Limits(tt.name); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
	if g := cfg.Global; g.InitialLimit != resilience.DefaultAdaptiveInitialLimit || g.Baseline != resilience.BaselineAverage || !g.On() {
		t.Errorf("global defaults %+v", g)
	}
	if len(cfg.Validate()) != 0 {
		t.Errorf("defaults invalid: %v", cfg.Validate())
	}
}

// TestAdmissionConfigValidate checks each relation at its edge.
func TestAdmissionConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(c *resilience.AdmissionConfig)
		want   string // the problem's path; "" when valid
	}{
		{"defaults", func(*resilience.AdmissionConfig) {}, ""},
		{"max_concurrency 1", func(c *resilience.AdmissionConfig) { c.Default.MaxConcurrency = 1 }, ""},
		{"max_concurrency negative", func(c *resilience.AdmissionConfig) { c.Default.MaxConcurrency = -1 }, "default.max_concurrency"},
		{"queue 1", func(c *resilience.AdmissionConfig) { c.Default.Queue = 1 }, ""},
		{"queue negative", func(c *resilience.AdmissionConfig) { c.Default.Queue = -1 }, "default.queue"},
		{"throttle negative", func(c *resilience.AdmissionConfig) { c.Default.Throttle = -time.Millisecond }, "default.throttle"},
		{"max_wait just over throttle", func(c *resilience.AdmissionConfig) { c.Default.MaxWait = c.Default.Throttle + 1 }, ""},
		{"max_wait equal to throttle", func(c *resilience.AdmissionConfig) { c.Default.MaxWait = c.Default.Throttle }, "default.max_wait"},
		{"a backend's max_wait", func(c *resilience.AdmissionConfig) {
			c.Backends = map[string]resilience.TargetLimits{"calc": {MaxConcurrency: 2, Throttle: time.Second, MaxWait: time.Second}}
		}, "backends.calc.max_wait"},
		{"empty backend name", func(c *resilience.AdmissionConfig) { c.Backends = map[string]resilience.TargetLimits{"": c.Default} }, "backends"},
		{"min_limit 0", func(c *resilience.AdmissionConfig) { c.Global.MinLimit = 0 }, "global.min_limit"},
		{"max_limit below min_limit", func(c *resilience.AdmissionConfig) { c.Global.MaxLimit = c.Global.MinLimit - 1 }, "global.max_limit"},
		{"initial_limit = min_limit", func(c *resilience.AdmissionConfig) { c.Global.InitialLimit = c.Global.MinLimit }, ""},
		{"initial_limit below min_limit", func(c *resilience.AdmissionConfig) { c.Global.InitialLimit = c.Global.MinLimit - 1 }, "global.initial_limit"},
		{"initial_limit above max_limit", func(c *resilience.AdmissionConfig) { c.Global.InitialLimit = c.Global.MaxLimit + 1 }, "global.initial_limit"},
		{"smoothing 1", func(c *resilience.AdmissionConfig) { c.Global.Smoothing = 1 }, ""},
		{"smoothing over 1", func(c *resilience.AdmissionConfig) { c.Global.Smoothing = 1.01 }, "global.smoothing"},
		{"smoothing 0", func(c *resilience.AdmissionConfig) { c.Global.Smoothing = 0 }, "global.smoothing"},
		{"tolerance 1", func(c *resilience.AdmissionConfig) { c.Global.Tolerance = 1 }, ""},
		{"tolerance below 1", func(c *resilience.AdmissionConfig) { c.Global.Tolerance = 0.99 }, "global.tolerance"},
		{"window 0", func(c *resilience.AdmissionConfig) { c.Global.Window = 0 }, "global.window"},
		{"baseline_window = window", func(c *resilience.AdmissionConfig) { c.Global.BaselineWindow = c.Global.Window }, "global.baseline_window"},
		{"baseline min", func(c *resilience.AdmissionConfig) { c.Global.Baseline = resilience.BaselineMin }, ""},
		{"baseline unknown", func(c *resilience.AdmissionConfig) { c.Global.Baseline = "median" }, "global.baseline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := resilience.AdmissionConfig{}.WithDefaults()
			tt.mutate(&cfg)
			probs := cfg.Validate()
			if tt.want == "" {
				if len(probs) > 0 {
					t.Fatalf("problems %v, want none", probs)
				}
				return
			}
			if !slices.ContainsFunc(probs, func(p resilience.ConfigError) bool { return p.Path == tt.want }) {
				t.Fatalf("problems %v, want one at %s", probs, tt.want)
			}
		})
	}
}
