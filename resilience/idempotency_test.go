package resilience_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
)

// backend is a terminal handler that counts its calls and records the params it got; it
// answers result, or err (only for its first failFirst calls when that is set), and waits
// for gate when one is set.
type backend struct {
	n         atomic.Int32
	result    []byte
	err       error
	failFirst int32
	stream    func() gateway.Stream
	gate      chan struct{}
	started   chan struct{}

	mu     sync.Mutex
	params []string
	keys   []string
}

func (b *backend) handle(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
	n := b.n.Add(1)
	key, _ := resilience.IdempotencyKeyFrom(ctx)
	b.mu.Lock()
	b.params = append(b.params, string(call.Params))
	b.keys = append(b.keys, key)
	b.mu.Unlock()
	if b.started != nil {
		b.started <- struct{}{}
	}
	if b.gate != nil {
		select {
		case <-b.gate:
		case <-ctx.Done():
			return nil, gateway.AsError(ctx.Err())
		}
	}
	switch {
	case b.err != nil && (b.failFirst == 0 || n <= b.failFirst):
		return nil, b.err
	case b.stream != nil:
		return &gateway.Result{Stream: b.stream()}, nil
	case b.result != nil:
		return gateway.NewResult(b.result), nil
	}
	return gateway.NewResult([]byte(`{"id":1}`)), nil
}

func (b *backend) seen() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.params...)
}

// idemStage returns b behind an idempotency stage of cfg over kv.
func idemStage(t testing.TB, cfg resilience.IdempotencyConfig, kv state.KV, b *backend, classify resilience.Classifier) gateway.Handler {
	t.Helper()
	s, err := resilience.NewIdempotency(cfg, resilience.NewKVIdempotencyRecords(kv), classify, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	h := gateway.Chain(b.handle, s.Middleware())
	return func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
		if _, ok := ctx.Deadline(); !ok { // a call that would wait for good fails the test instead
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
		}
		return h(ctx, call)
	}
}

func keyed(method, subject, params string) *gateway.Call {
	c := caller(method, subject, "")
	c.Params = []byte(params)
	return c
}

// errCode returns err's code and error.data.reason, 0 and "" for nil.
func errCode(err error) (schemas.Code, any) {
	if ge := gateway.AsError(err); ge != nil {
		return ge.Code(), ge.Data()["reason"]
	}
	return 0, nil
}

func TestIdempotencyReplaysTheFirstSuccess(t *testing.T) {
	b := &backend{}
	h := idemStage(t, resilience.IdempotencyConfig{}, newKV(t, newClock()), b, nil)
	first, err := h(context.Background(), keyed("order.create", "alice", `{"idempotency_key":"k1","item":"book","qty":2}`))
	if err != nil {
		t.Fatal(err)
	}
	b.result = []byte(`{"id":2}`) // a second run would answer differently
	for _, params := range []string{
		`{"idempotency_key":"k1","item":"book","qty":2}`,
		`{ "qty" : 2, "item":"book", "idempotency_key":"k1" }`, // same call, other key order and spacing
		`{"item":"\u0062ook","qty":2,"\u0069dempotency_key":"k1"}`,
	} {
		again, err := h(context.Background(), keyed("order.create", "alice", params))
		if err != nil {
			t.Fatalf("%s: %v", params, err)
		}
		if string(again.Value) != string(first.Value) {
			t.Errorf("%s: replay %s, want %s", params, again.Value, first.Value)
		}
	}
	if n := b.n.Load(); n != 1 {
		t.Errorf("the backend ran %d times, want once", n)
	}
	if got := b.seen(); got[0] != `{"item":"book","qty":2}` {
		t.Errorf("the backend got params %s: idempotency_key was not removed", got[0])
	}
	if b.keys[0] != "k1" {
		t.Errorf("IdempotencyKeyFrom = %q in the backend's context", b.keys[0])
	}
}

func TestIdempotencyKeyIsRemovedFromParams(t *testing.T) {
	tests := []struct {
		params, want string
		runs         int32 // backend runs for two identical calls
	}{
		{`{"idempotency_key":"k","a":1}`, `{"a":1}`, 1},
		{`{"a":1,"idempotency_key":"k"}`, `{"a":1}`, 1},
		{`{"a":[1,{"b":"}"}],"idempotency_key":"k","c":null}`, `{"a":[1,{"b":"}"}],"c":null}`, 1},
		{`{"idempotency_key":"k"}`, `{}`, 1},
		{` {"\u0069dempotency_key" : "k" , "a" : 1 } `, `{"a" : 1}`, 1},
		{`{"a":{"idempotency_key":"k"}}`, `{"a":{"idempotency_key":"k"}}`, 2}, // not at the top level
		{`{"a":"idempotency_key"}`, `{"a":"idempotency_key"}`, 2},
		{`["idempotency_key","k"]`, `["idempotency_key","k"]`, 2}, // array params have no members
		{`{"a":1}`, `{"a":1}`, 2},
		{``, ``, 2},
	}
	for _, tt := range tests {
		t.Run(tt.params, func(t *testing.T) {
			b := &backend{}
			h := idemStage(t, resilience.IdempotencyConfig{}, newKV(t, newClock()), b, nil)
			for range 2 {
				if _, err := h(context.Background(), keyed("m", "alice", tt.params)); err != nil {
					t.Fatal(err)
				}
			}
			if got := b.seen()[0]; got != tt.want {
				t.Errorf("backend params %s, want %s", got, tt.want)
			}
			if n := b.n.Load(); n != tt.runs {
				t.Errorf("the backend ran %d times, want %d", n, tt.runs)
			}
		})
	}
}

func TestIdempotencyInvalidKey(t *testing.T) {
	cfg := resilience.IdempotencyConfig{MaxKeyBytes: 8}
	tests := []struct {
		params string
		ok     bool
	}{
		{`{"idempotency_key":"12345678"}`, true}, // max_key_bytes exactly
		{`{"idempotency_key":"123456789"}`, false},
		{`{"idempotency_key":"\u00e9\u00e9\u00e9\u00e9"}`, true}, // 8 bytes once unescaped
		{`{"idempotency_key":"\u00e9\u00e9\u00e9\u00e9a"}`, false},
		{`{"idempotency_key":""}`, false},
		{`{"idempotency_key":12}`, false},
		{`{"idempotency_key":null}`, false},
		{`{"idempotency_key":["k"]}`, false},
		{`{"idempotency_key":"k","idempotency_key":"k"}`, false}, // the decoder refuses it first; here too
	}
	for _, tt := range tests {
		t.Run(tt.params, func(t *testing.T) {
			b := &backend{}
			_, err := idemStage(t, cfg, newKV(t, newClock()), b, nil)(context.Background(), keyed("m", "alice", tt.params))
			if tt.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if code, _ := errCode(err); code != schemas.CodeInvalidParams || b.n.Load() != 0 {
				t.Fatalf("got %v after %d runs, want INVALID_PARAMS and no run", err, b.n.Load())
			}
		})
	}
}

func TestIdempotencySameKeyOtherParams(t *testing.T) {
	tests := []struct{ first, then string }{
		{`{"idempotency_key":"k","qty":2}`, `{"idempotency_key":"k","qty":3}`},
		{`{"idempotency_key":"k","qty":1}`, `{"idempotency_key":"k","qty":1.0}`},
		{`{"idempotency_key":"k","n":10000000000000001}`, `{"idempotency_key":"k","n":10000000000000000}`},
		{`{"idempotency_key":"k","qty":2}`, `{"idempotency_key":"k"}`},
		{`{"idempotency_key":"k","a":"x"}`, `{"idempotency_key":"k","a":"x","b":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.then, func(t *testing.T) {
			b := &backend{}
			h := idemStage(t, resilience.IdempotencyConfig{}, newKV(t, newClock()), b, nil)
			if _, err := h(context.Background(), keyed("m", "alice", tt.first)); err != nil {
				t.Fatal(err)
			}
			_, err := h(context.Background(), keyed("m", "alice", tt.then))
			if code, reason := errCode(err); code != schemas.CodeInvalidParams || reason != "idempotency_key_reused" {
				t.Fatalf("got %v, want INVALID_PARAMS idempotency_key_reused", err)
			}
			if b.n.Load() != 1 {
				t.Errorf("the backend ran %d times, want once", b.n.Load())
			}
		})
	}
}

func TestIdempotencyFailureIsNotKept(t *testing.T) {
	b := &backend{err: gateway.NewError(schemas.CodeUnavailable)}
	h := idemStage(t, resilience.IdempotencyConfig{}, newKV(t, newClock()), b, nil)
	call := func() error {
		_, err := h(context.Background(), keyed("m", "alice", `{"idempotency_key":"k"}`))
		return err
	}
	if code, _ := errCode(call()); code != schemas.CodeUnavailable {
		t.Fatal("the failure did not reach the caller")
	}
	b.err = nil
	if err := call(); err != nil {
		t.Fatalf("the retry after a failure: %v", err)
	}
	if err := call(); err != nil {
		t.Fatal(err)
	}
	if n := b.n.Load(); n != 2 {
		t.Errorf("the backend ran %d times, want 2 (the failure, then the success that is replayed)", n)
	}
}

// TestIdempotencyScopes: a key never replays another caller's or another method's result.
func TestIdempotencyScopes(t *testing.T) {
	at := func(ip string) context.Context {
		return resilience.WithClientAddr(context.Background(), netip.MustParseAddr(ip))
	}
	anon := func(params string) *gateway.Call {
		c := anonymous("m")
		c.Params = []byte(params)
		return c
	}
	const p = `{"idempotency_key":"k"}`
	tests := []struct {
		name        string
		firstCtx    context.Context
		first       *gateway.Call
		thenCtx     context.Context
		then        *gateway.Call
		wantReplays bool
	}{
		{"same caller and method", context.Background(), keyed("m", "alice", p), context.Background(), keyed("m", "alice", p), true},
		{"another subject", context.Background(), keyed("m", "alice", p), context.Background(), keyed("m", "bob", p), false},
		{"another method", context.Background(), keyed("m", "alice", p), context.Background(), keyed("n", "alice", p), false},
		{"anonymous, another address", at("10.0.0.1"), anon(p), at("10.0.0.2"), anon(p), false},
		{"anonymous, same address", at("10.0.0.1"), anon(p), at("10.0.0.1"), anon(p), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &backend{}
			h := idemStage(t, resilience.IdempotencyConfig{}, newKV(t, newClock()), b, nil)
			if _, err := h(tt.firstCtx, tt.first); err != nil {
				t.Fatal(err)
			}
			if _, err := h(tt.thenCtx, tt.then); err != nil {
				t.Fatal(err)
			}
			if replayed := b.n.Load() == 1; replayed != tt.wantReplays {
				t.Errorf("replayed = %v, want %v", replayed, tt.wantReplays)
			}
		})
	}
}

func TestIdempotencyRecordExpires(t *testing.T) {
	clk := newClock()
	b := &backend{}
	h := idemStage(t, resilience.IdempotencyConfig{TTL: time.Hour}, newKV(t, clk), b, nil)
	call := func() {
		t.Helper()
		if _, err := h(context.Background(), keyed("m", "alice", `{"idempotency_key":"k"}`)); err != nil {
			t.Fatal(err)
		}
	}
	call()
	clk.Add(time.Hour - 1)
	call()
	if b.n.Load() != 1 {
		t.Fatalf("the record expired before its ttl")
	}
	clk.Add(1)
	call()
	if b.n.Load() != 2 {
		t.Fatalf("the record outlived its ttl")
	}
}

// TestIdempotencyResultSizeEdge: a result of max_result_bytes is kept and replayed; one byte
// more is not kept, and a repeat is told the call completed rather than run again.
func TestIdempotencyResultSizeEdge(t *testing.T) {
	const maxResult = 16
	for _, size := range []int{maxResult, maxResult + 1} {
		t.Run(strings.Repeat("x", size), func(t *testing.T) {
			result := []byte(`"` + strings.Repeat("x", size-2) + `"`)
			b := &backend{result: result}
			h := idemStage(t, resilience.IdempotencyConfig{MaxResultBytes: maxResult}, newKV(t, newClock()), b, nil)
			first, err := h(context.Background(), keyed("m", "alice", `{"idempotency_key":"k"}`))
			if err != nil || string(first.Value) != string(result) {
				t.Fatalf("first call: %v %v", first, err)
			}
			again, err := h(context.Background(), keyed("m", "alice", `{"idempotency_key":"k"}`))
			if size <= maxResult {
				if err != nil || string(again.Value) != string(result) {
					t.Fatalf("repeat: %v %v, want the replay", again, err)
				}
			} else if code, reason := errCode(err); code != schemas.CodeInvalidParams || reason != "idempotency_result_not_kept" {
				t.Fatalf("repeat: %v, want INVALID_PARAMS idempotency_result_not_kept", err)
			}
			if b.n.Load() != 1 {
				t.Errorf("the backend ran %d times, want once", b.n.Load())
			}
		})
	}
}

// TestIdempotencyConcurrentDuplicateRunsOnce: a repeat that arrives while the first call
// runs waits for it and gets its result; the backend runs once.
func TestIdempotencyConcurrentDuplicateRunsOnce(t *testing.T) {
	b := &backend{gate: make(chan struct{}), started: make(chan struct{}, 8)}
	kv := state.NewEmbedded(state.EmbeddedOptions{}) // on real time: the lock must outlive the wait
	t.Cleanup(func() { _ = kv.Close() })
	h := idemStage(t, resilience.IdempotencyConfig{PollInterval: time.Millisecond}, kv, b, nil)
	results := make(chan string, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			res, err := h(context.Background(), keyed("m", "alice", `{"idempotency_key":"k","a":1}`))
			if err != nil {
				results <- err.Error()
				return
			}
			results <- string(res.Value)
		})
	}
	<-b.started
	time.Sleep(20 * time.Millisecond) // let the repeats reach their wait; they must not start the backend
	close(b.gate)
	wg.Wait()
	close(results)
	for r := range results {
		if r != `{"id":1}` {
			t.Errorf("a caller got %s", r)
		}
	}
	if n := b.n.Load(); n != 1 {
		t.Errorf("the backend ran %d times, want once", n)
	}
}

// TestIdempotencyWaitIsBoundedByDeadline: a repeat waiting for the first call gives up at
// its own deadline, and the first call's outcome is still kept.
func TestIdempotencyWaitIsBoundedByDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &backend{gate: make(chan struct{}), started: make(chan struct{}, 1)}
		h := idemStage(t, resilience.IdempotencyConfig{}, newKV(t, newClock()), b, nil)
		firstDone := make(chan error, 1)
		go func() {
			_, err := h(context.Background(), keyed("m", "alice", `{"idempotency_key":"k"}`))
			firstDone <- err
		}()
		<-b.started
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := h(ctx, keyed("m", "alice", `{"idempotency_key":"k"}`))
		if code, _ := errCode(err); code != schemas.CodeDeadlineExceeded || gateway.AsError(err).Data()["layer"] != gateway.LayerGateway {
			t.Fatalf("got %v, want DEADLINE_EXCEEDED at layer gateway", err)
		}
		if waited := time.Since(start); waited != 300*time.Millisecond {
			t.Errorf("waited %s, want the deadline, 300ms", waited)
		}
		close(b.gate)
		if err := <-firstDone; err != nil {
			t.Fatal(err)
		}
		if _, err := h(context.Background(), keyed("m", "alice", `{"idempotency_key":"k"}`)); err != nil || b.n.Load() != 1 {
			t.Fatalf("after the first finished: %v, %d runs; want its replay", err, b.n.Load())
		}
	})
}

// TestIdempotencyWaiterRunsAfterFailure: when the first call fails, a waiting repeat runs
// the call itself.
func TestIdempotencyWaiterRunsAfterFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &backend{gate: make(chan struct{}), started: make(chan struct{}, 2), err: gateway.NewError(schemas.CodeUnavailable), failFirst: 1}
		h := idemStage(t, resilience.IdempotencyConfig{}, newKV(t, newClock()), b, nil)
		firstDone := make(chan error, 1)
		go func() {
			_, err := h(context.Background(), keyed("m", "alice", `{"idempotency_key":"k"}`))
			firstDone <- err
		}()
		<-b.started
		second := make(chan error, 1)
		go func() {
			_, err := h(context.Background(), keyed("m", "alice", `{"idempotency_key":"k"}`))
			second <- err
		}()
		synctest.Wait() // the repeat is waiting
		if b.n.Load() != 1 {
			t.Fatal("the repeat ran while the first call held the key")
		}
		close(b.gate)
		if code, _ := errCode(<-firstDone); code != schemas.CodeUnavailable {
			t.Fatal("the first call did not fail")
		}
		<-b.started
		if err := <-second; err != nil || b.n.Load() != 2 {
			t.Fatalf("the repeat: %v after %d runs, want its own success", err, b.n.Load())
		}
	})
}

func TestIdempotencyReadOnlyCallsAreNotRecorded(t *testing.T) {
	b := &backend{}
	readOnly := func(_ context.Context, c *gateway.Call) bool { return c.Method != "order.get" }
	h := idemStage(t, resilience.IdempotencyConfig{}, newKV(t, newClock()), b, readOnly)
	for range 2 {
		if _, err := h(context.Background(), keyed("order.get", "alice", `{"idempotency_key":"k","a":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	if b.n.Load() != 2 {
		t.Errorf("a read-only call ran %d times, want every time", b.n.Load())
	}
	if got := b.seen(); got[0] != `{"a":1}` || b.keys[0] != "k" {
		t.Errorf("params %s, key %q: the key should be removed and visible to later stages", got[0], b.keys[0])
	}
}

func TestIdempotencyLeavesCapabilityInputAlone(t *testing.T) {
	b := &backend{}
	h := idemStage(t, resilience.IdempotencyConfig{}, newKV(t, newClock()), b, nil)
	for range 2 {
		c := keyed("m", "alice", `{"idempotency_key":"k"}`)
		c.Capability = "cap"
		if _, err := h(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	if b.n.Load() != 2 || b.seen()[0] != `{"idempotency_key":"k"}` {
		t.Errorf("a capability's input was treated as reserved: %d runs, params %s", b.n.Load(), b.seen()[0])
	}
}

// sliceStream yields msgs, then io.EOF.
type sliceStream struct {
	msgs   []string
	closed atomic.Bool
}

func (s *sliceStream) Recv(context.Context) ([]byte, error) {
	if len(s.msgs) == 0 {
		return nil, io.EOF
	}
	m := s.msgs[0]
	s.msgs = s.msgs[1:]
	return []byte(m), nil
}

func (s *sliceStream) Close() error { s.closed.Store(true); return nil }

// TestIdempotencyStreamedResults: a stream read to its end is recorded as completed (its
// messages are not kept, so a repeat is told so); a stream abandoned early frees the key.
func TestIdempotencyStreamedResults(t *testing.T) {
	for _, tt := range []struct {
		name       string
		readAll    bool
		wantReason any
	}{
		{"read to the end", true, "idempotency_result_not_kept"},
		{"closed early", false, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := &backend{stream: func() gateway.Stream { return &sliceStream{msgs: []string{"1", "2"}} }}
			h := idemStage(t, resilience.IdempotencyConfig{}, newKV(t, newClock()), b, nil)
			res, err := h(context.Background(), keyed("m", "alice", `{"idempotency_key":"k"}`))
			if err != nil {
				t.Fatal(err)
			}
			for tt.readAll {
				if _, err := res.Stream.Recv(context.Background()); errors.Is(err, io.EOF) {
					break
				}
			}
			_ = res.Stream.Close()
			res, err = h(context.Background(), keyed("m", "alice", `{"idempotency_key":"k"}`))
			if _, reason := errCode(err); reason != tt.wantReason || (tt.wantReason == nil && err != nil) {
				t.Fatalf("repeat: %v, want reason %v", err, tt.wantReason)
			}
			if res != nil {
				_ = res.Stream.Close()
			}
			if want := map[bool]int32{true: 1, false: 2}[tt.readAll]; b.n.Load() != want {
				t.Errorf("the backend ran %d times, want %d", b.n.Load(), want)
			}
		})
	}
}

func TestIdempotencyStoreFailure(t *testing.T) {
	b := &backend{}
	_, err := idemStage(t, resilience.IdempotencyConfig{}, failingKV{}, b, nil)(context.Background(), keyed("m", "alice", `{"idempotency_key":"k"}`))
	if ge := gateway.AsError(err); ge == nil || ge.Code() != schemas.CodeUnavailable || ge.Data()["retry_after_ms"] == nil || b.n.Load() != 0 {
		t.Fatalf("got %v after %d runs, want UNAVAILABLE with retry_after_ms and no run", err, b.n.Load())
	}
}

func TestIdempotencyConfigProblems(t *testing.T) {
	tests := []struct {
		name string
		cfg  resilience.IdempotencyConfig
		want string // path of the problem, "" for none
	}{
		{"defaults", resilience.IdempotencyConfig{}, ""},
		{"ttl 1s", resilience.IdempotencyConfig{TTL: time.Second, PollInterval: time.Millisecond}, ""},
		{"ttl under 1s", resilience.IdempotencyConfig{TTL: time.Second - 1, PollInterval: time.Millisecond}, "ttl"},
		{"ttl 30 days", resilience.IdempotencyConfig{TTL: resilience.MaxIdempotencyTTL}, ""},
		{"ttl over 30 days", resilience.IdempotencyConfig{TTL: resilience.MaxIdempotencyTTL + 1}, "ttl"},
		{"largest key", resilience.IdempotencyConfig{MaxKeyBytes: resilience.MaxIdempotencyKeyBytes}, ""},
		{"key too long", resilience.IdempotencyConfig{MaxKeyBytes: resilience.MaxIdempotencyKeyBytes + 1}, "max_key_bytes"},
		{"negative key", resilience.IdempotencyConfig{MaxKeyBytes: -1}, "max_key_bytes"},
		{"largest result", resilience.IdempotencyConfig{MaxResultBytes: resilience.MaxIdempotencyResult}, ""},
		{"result past the store's value limit", resilience.IdempotencyConfig{MaxResultBytes: resilience.MaxIdempotencyResult + 1}, "max_result_bytes"},
		{"poll interval as long as ttl", resilience.IdempotencyConfig{TTL: time.Second, PollInterval: time.Second}, "poll_interval"},
		{"poll interval under 1ms", resilience.IdempotencyConfig{PollInterval: time.Millisecond - 1}, "poll_interval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := tt.cfg.Validate()
			got := ""
			if len(errs) > 0 {
				got = errs[0].Path
			}
			if got != tt.want || len(errs) > 1 {
				t.Errorf("problems %v, want one at %q", errs, tt.want)
			}
		})
	}
}

// TestIdempotencyResultFitsTheStore: a result of the largest max_result_bytes, recorded,
// fits the embedded store's value limit.
func TestIdempotencyResultFitsTheStore(t *testing.T) {
	result := []byte(`"` + strings.Repeat("x", resilience.MaxIdempotencyResult-2) + `"`)
	b := &backend{result: result}
	h := idemStage(t, resilience.IdempotencyConfig{MaxResultBytes: resilience.MaxIdempotencyResult}, newKV(t, newClock()), b, nil)
	for range 2 {
		res, err := h(context.Background(), keyed("m", "alice", `{"idempotency_key":"k"}`))
		if err != nil || len(res.Value) != len(result) {
			t.Fatalf("%v, %v", len(res.Value), err)
		}
	}
	if b.n.Load() != 1 {
		t.Errorf("the largest result was not kept: %d runs", b.n.Load())
	}
}
