package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/configs"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// fixedService is a backend with a fixed service time and a fixed number of workers: at
// most workers calls are served at once, each for service; the others wait for a worker
// (while their context lasts), as at a server with a worker pool. Its saturation rate is
// workers ÷ service calls per second.
type fixedService struct {
	service time.Duration
	workers chan struct{}
}

func newFixedService(workers int, service time.Duration) *fixedService {
	return &fixedService{service: service, workers: make(chan struct{}, workers)}
}

func (f *fixedService) Name() string { return "fixed" }

func (f *fixedService) Invoke(ctx context.Context, _ *gateway.Call) (*gateway.Result, error) {
	select {
	case f.workers <- struct{}{}:
	case <-ctx.Done():
		return nil, gateway.AsError(ctx.Err())
	}
	defer func() { <-f.workers }()
	t := time.NewTimer(f.service)
	defer t.Stop()
	select {
	case <-t.C:
		return gateway.NewResult([]byte(`"done"`)), nil
	case <-ctx.Done():
		return nil, gateway.AsError(ctx.Err())
	}
}

const fixedCall = `{"jsonrpc":"2.0","method":"work","id":1}`

// loadSample is the outcome of one call of a load run.
type loadSample struct {
	start   time.Duration // since the run began
	latency time.Duration
	// served is the latency from the moment the call had its connection: without the
	// dial and the wait for a pooled connection, which on a loaded machine can take a
	// SYN retransmission (1 s) and say nothing of how the gateway answered.
	served time.Duration
	status int
	code   int    // the JSON-RPC error code; 0 for a result
	reason string // error.data.reason
	err    error
}

func (s loadSample) ok() bool   { return s.err == nil && s.status == http.StatusOK && s.code == 0 }
func (s loadSample) shed() bool { return s.err == nil && (s.code == 5002 || s.code == 5001) }

// end is when the call's answer came, since the run began.
func (s loadSample) end() time.Duration { return s.start + s.latency }

// overloadClient is an HTTP client for load runs: enough idle connections for every call in
// flight, and no call may take longer than loadCallTimeout.
type overloadClient struct {
	http *http.Client
	url  string
}

// loadCallTimeout bounds every call of a load run: a call that takes longer has hung.
const loadCallTimeout = 10 * time.Second

func newOverloadClient(url string) *overloadClient {
	return &overloadClient{url: url, http: &http.Client{Timeout: loadCallTimeout,
		Transport: &http.Transport{MaxIdleConnsPerHost: 1024, DisableCompression: true}}}
}

func (c *overloadClient) close() { c.http.CloseIdleConnections() }

// call posts one request and measures it.
func (c *overloadClient) call(ctx context.Context, body string, since time.Time) loadSample {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		return loadSample{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	gotConn := start
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { gotConn = time.Now() }}))
	s := loadSample{start: start.Sub(since)}
	resp, err := c.http.Do(req)
	if err != nil {
		s.err = err
		return s
	}
	out, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	s.latency, s.served, s.status, s.err = time.Since(start), time.Since(gotConn), resp.StatusCode, err
	if s.err == nil && !bytes.Contains(out, []byte(`"result"`)) {
		var r struct {
			Error *struct {
				Code int `json:"code"`
				Data struct {
					Reason string `json:"reason"`
				} `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal(out, &r); err != nil || r.Error == nil {
			s.err = fmt.Errorf("unexpected response %q", out)
		} else {
			s.code, s.reason = r.Error.Code, r.Error.Data.Reason
		}
	}
	return s
}

// openLoop sends calls at rate per second for d — each on its own goroutine, at its
// scheduled time whether or not earlier calls have answered, so queueing shows in latency
// rather than slowing the arrivals — and returns every call's outcome once all answered.
func (c *overloadClient) openLoop(ctx context.Context, rate float64, d time.Duration) []loadSample {
	n := int(rate * d.Seconds())
	out := make([]loadSample, n)
	var wg sync.WaitGroup
	begin := time.Now()
	for i := range n {
		if wait := time.Until(begin.Add(time.Duration(float64(i) / rate * float64(time.Second)))); wait > 0 {
			time.Sleep(wait)
		}
		wg.Go(func() { out[i] = c.call(ctx, fixedCall, begin) })
	}
	wg.Wait()
	return out
}

// closedLoop runs callers that each call again as soon as they are answered, for d, and
// returns every call's outcome.
func (c *overloadClient) closedLoop(ctx context.Context, callers int, d time.Duration) []loadSample {
	var (
		mu  sync.Mutex
		out []loadSample
		wg  sync.WaitGroup
	)
	begin := time.Now()
	for range callers {
		wg.Go(func() {
			for time.Since(begin) < d {
				s := c.call(ctx, fixedCall, begin)
				mu.Lock()
				out = append(out, s)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}

// goodput is the calls per second that succeeded with their answer within [from, to)
// of the run: the steady state, without the ramp-up at the start.
func goodput(samples []loadSample, from, to time.Duration) float64 {
	n := 0
	for _, s := range samples {
		if s.ok() && s.end() >= from && s.end() < to {
			n++
		}
	}
	return float64(n) / (to - from).Seconds()
}

// latencyQuantile returns the p-quantile (0 < p ≤ 1) of the latencies of the samples keep
// selects; 0 when there are none.
func latencyQuantile(samples []loadSample, keep func(loadSample) bool, p float64) time.Duration {
	return quantileOf(samples, keep, p, func(s loadSample) time.Duration { return s.latency })
}

// quantileOf returns the p-quantile (0 < p ≤ 1) of of(s) over the samples keep selects; 0
// when there are none.
func quantileOf(samples []loadSample, keep func(loadSample) bool, p float64, of func(loadSample) time.Duration) time.Duration {
	var lat []time.Duration
	for _, s := range samples {
		if keep(s) {
			lat = append(lat, of(s))
		}
	}
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	return lat[min(int(p*float64(len(lat))), len(lat)-1)]
}

// overloadOutcome counts a load run's outcomes and keeps a few of the unexpected ones.
type overloadOutcome struct {
	ok, shed, other int
	reasons         map[string]int // of the shed calls
	examples        []string
}

func classifyLoad(samples []loadSample) overloadOutcome {
	o := overloadOutcome{reasons: map[string]int{}}
	for _, s := range samples {
		switch {
		case s.ok():
			o.ok++
		case s.shed() && (s.status == http.StatusServiceUnavailable || s.status == http.StatusTooManyRequests):
			o.shed++
			o.reasons[s.reason]++
		default:
			o.other++
			if len(o.examples) < 5 {
				o.examples = append(o.examples, fmt.Sprintf("HTTP %d code %d err %v after %s", s.status, s.code, s.err, s.latency))
			}
		}
	}
	return o
}

// overloadConfig is baseConfig without a log line per shed call.
var overloadConfig = strings.Replace(baseConfig, "log: {level: debug}", "log: {level: info}", 1)

// TestOverload runs open-loop load at 3× the measured saturation rate against a backend of
// fixed service time: every call either succeeds or is shed fast (5002 with HTTP 503, or
// 5001), none fails otherwise and none hangs. Shedding happens at the backend's queue
// (sized as docs/resilience.md recommends) or, with generous queues, at the global
// adaptive limit alone.
func TestOverload(t *testing.T) {
	const (
		workers = 16
		service = 200 * time.Millisecond // long beside a loaded 2-core machine's scheduling delays
	)
	shipped, err := configs.Sections("admission")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		admission string
		reason    string // why calls are shed
	}{
		// The shipped default's admission section, verbatim: what a user gets. Its global
		// limit adapts from windows of at least 10 calls, and the backend runs 16 at once.
		{"shipped default", "\n" + shipped, "global_limit"},
		{"backend queue", fmt.Sprintf(`
admission:
  backends:
    fixed: {max_concurrency: %d, queue: %d, throttle: 50ms}
`, workers, workers/2), "queue_full"},
		{"global adaptive limit", `
admission:
  global: {window: 50ms}
`, "global_limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := start(t, overloadConfig+tt.admission, map[string]gateway.Target{"work": newFixedService(workers, service)})
			client := newOverloadClient(ts.base + "/rpc")
			defer client.close()
			ctx := t.Context()

			const satRun = time.Second
			sat := goodput(client.closedLoop(ctx, 2*workers, satRun), satRun/5, satRun)
			if sat <= 0 {
				t.Fatal("no call succeeded while measuring the saturation rate")
			}
			const overRun = 3 * time.Second
			samples := client.openLoop(ctx, 3*sat, overRun)
			o := classifyLoad(samples)
			t.Logf("saturation %.0f calls/s; at 3×: %d calls, %d succeeded, %d shed %v", sat, len(samples), o.ok, o.shed, o.reasons)
			if o.other > 0 {
				t.Fatalf("%d calls neither succeeded nor were shed, e.g. %v", o.other, o.examples)
			}
			if o.ok == 0 || o.reasons[tt.reason] == 0 {
				t.Fatalf("%d succeeded, shed %v: want calls shed for %s", o.ok, o.reasons, tt.reason)
			}
			// A shed call is answered at once: well within one service time, which is what a
			// call refused only after waiting for a turn would take.
			// Measured from when the call had its connection: the dial is the client's.
			shed := func(s loadSample) bool { return s.shed() }
			served := func(s loadSample) time.Duration { return s.served }
			p99, worst := quantileOf(samples, shed, 0.99, served), quantileOf(samples, shed, 1, served)
			t.Logf("shed calls: p99 %s, slowest %s (service time %s; with the dial: p99 %s)", p99, worst, service, latencyQuantile(samples, shed, 0.99))
			// The bounds leave room for a loaded 2-core machine running the load generator, the
			// gateway and other tests at once (p99 reached 0.33× there); the benchmark reports
			// the figure on a quiet machine.
			if ratio := float64(p99) / float64(service); ratio > 0.5 {
				t.Errorf("p99 of shed calls %s is %.2f× the service time, want ≤ 0.5×", p99, ratio)
			}
			if ratio := float64(worst) / float64(service); ratio > 0.9 {
				t.Errorf("the slowest shed call took %s, %.2f× the service time, want < 0.9×", worst, ratio)
			}
			if good := goodput(samples, overRun/5, overRun); good < 0.5*sat {
				t.Errorf("goodput at 3× is %.0f calls/s, below half the saturation rate %.0f: shedding collapsed throughput", good, sat)
			}
		})
	}
}
