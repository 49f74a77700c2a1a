// Package chaostest drives JSON-RPC load at a gateway while a chaos test breaks its
// backends, and records for every call how long it took against the deadline it was given
// and how it ended. The load is bounded in time and in count: it stops by itself.
package chaostest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Call is one request the load sends: a method and its params (raw JSON, "" for none).
type Call struct {
	Method string
	Params string
}

// Sample is how one call went.
type Sample struct {
	Method string
	// Start is when the call was sent; Took how long until its response was read.
	Start time.Time
	Took  time.Duration
	// Budget is the deadline the call was given (X-Deadline-Ms = Start + Budget).
	Budget time.Duration
	// Code is 0 for a result, else the JSON-RPC error code; Data is error.data.
	Code int
	Data map[string]any
	// Err is set when the call got no JSON-RPC response at all.
	Err error
}

// Options bound a Load.
type Options struct {
	// URL is the gateway's POST /rpc address.
	URL string
	// Calls are sent round-robin, each worker starting at its own.
	Calls []Call
	// Workers is how many calls are in flight at once.
	Workers int
	// Budget is each call's deadline from its start.
	Budget time.Duration
	// Pause is each worker's pause between calls.
	Pause time.Duration
	// MaxCalls and MaxDuration stop the load by themselves when Stop is not called first.
	MaxCalls    int
	MaxDuration time.Duration
}

// Load is load running against a gateway.
type Load struct {
	opts   Options
	client *http.Client
	stop   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
	end    *time.Timer // halts the load after MaxDuration

	mu      sync.Mutex
	samples []Sample
	sent    int
}

// Start starts the load.
func Start(opts Options) *Load {
	l := &Load{opts: opts, stop: make(chan struct{}),
		// The client's timeout only guards the test: a call outlasting its deadline by this
		// much is recorded as hung.
		client: &http.Client{Timeout: opts.Budget + 5*time.Second}}
	l.end = time.AfterFunc(opts.MaxDuration, l.halt)
	for w := range opts.Workers {
		l.wg.Go(func() { l.work(w) })
	}
	return l
}

func (l *Load) halt() { l.once.Do(func() { close(l.stop) }) }

// Stop stops the load, waits for the calls in flight and returns every sample.
func (l *Load) Stop() []Sample {
	l.halt()
	l.end.Stop()
	l.wg.Wait()
	return l.Samples()
}

// Samples returns the samples recorded so far.
func (l *Load) Samples() []Sample {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Sample(nil), l.samples...)
}

// WaitFor waits up to d for a call that started at or after since and satisfies cond,
// and returns it; ok is false when none came.
func (l *Load) WaitFor(since time.Time, d time.Duration, cond func(Sample) bool) (s Sample, ok bool) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for _, s := range l.Samples() {
			if !s.Start.Before(since) && cond(s) {
				return s, true
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return Sample{}, false
}

// take reserves the next call number, false once the load is over.
func (l *Load) take() (int, bool) {
	select {
	case <-l.stop:
		return 0, false
	default:
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sent >= l.opts.MaxCalls {
		return 0, false
	}
	l.sent++
	return l.sent, true
}

func (l *Load) work(w int) {
	for i := w; ; i++ {
		n, ok := l.take()
		if !ok {
			return
		}
		s := l.call(l.opts.Calls[i%len(l.opts.Calls)], n)
		l.mu.Lock()
		l.samples = append(l.samples, s)
		l.mu.Unlock()
		select {
		case <-l.stop:
			return
		case <-time.After(l.opts.Pause):
		}
	}
}

// call sends c with id n and records how it went.
func (l *Load) call(c Call, n int) Sample {
	body := `{"jsonrpc":"2.0","method":` + strconv.Quote(c.Method) + `,"id":` + strconv.Itoa(n)
	if c.Params != "" {
		body += `,"params":` + c.Params
	}
	body += "}"
	s := Sample{Method: c.Method, Start: time.Now(), Budget: l.opts.Budget}
	req, err := http.NewRequest(http.MethodPost, l.opts.URL, bytes.NewReader([]byte(body)))
	if err != nil {
		s.Err = err
		return s
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Deadline-Ms", strconv.FormatInt(s.Start.Add(s.Budget).UnixMilli(), 10))
	resp, err := l.client.Do(req)
	if err == nil {
		var raw []byte
		raw, err = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err == nil {
			err = s.decode(raw)
		}
	}
	s.Took, s.Err = time.Since(s.Start), err
	return s
}

func (s *Sample) decode(raw []byte) error {
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code int            `json:"code"`
			Data map[string]any `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("response %q: %w", raw, err)
	}
	if r.Error != nil {
		s.Code, s.Data = r.Error.Code, r.Error.Data
	}
	return nil
}

// Overdue returns the samples that got no response, or got it later than their deadline
// plus slack.
func Overdue(samples []Sample, slack time.Duration) []Sample {
	var out []Sample
	for _, s := range samples {
		if s.Err != nil || s.Took > s.Budget+slack {
			out = append(out, s)
		}
	}
	return out
}

// Count returns how many samples have code.
func Count(samples []Sample, code int) int {
	n := 0
	for _, s := range samples {
		if s.Err == nil && s.Code == code {
			n++
		}
	}
	return n
}
