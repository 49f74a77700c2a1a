package mcpface

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
)

func TestMRTRConfig(t *testing.T) {
	var zero MRTRConfig
	if zero.parkedTimeout() != DefaultMRTRParkedTimeout || zero.maxParked() != DefaultMRTRMaxParked || zero.forwardTimeout() != DefaultMRTRForwardTimeout {
		t.Fatalf("defaults: %v %d %v", zero.parkedTimeout(), zero.maxParked(), zero.forwardTimeout())
	}
	set := MRTRConfig{ParkedTimeout: time.Second, MaxParked: 1, ForwardTimeout: minMRTRForwardTimeout}
	if set.parkedTimeout() != time.Second || set.maxParked() != 1 || set.forwardTimeout() != minMRTRForwardTimeout {
		t.Fatalf("set: %+v", set)
	}
	tests := []struct {
		name string
		cfg  MRTRConfig
		want string // "" valid
	}{
		{"absent", MRTRConfig{}, ""},
		{"smallest", MRTRConfig{ParkedTimeout: time.Nanosecond, MaxParked: 1, ForwardTimeout: minMRTRForwardTimeout}, ""},
		{"negative parked_timeout", MRTRConfig{ParkedTimeout: -time.Nanosecond}, "parked_timeout must not be negative"},
		{"negative max_parked", MRTRConfig{MaxParked: -1}, "max_parked must not be negative"},
		{"negative forward_timeout", MRTRConfig{ForwardTimeout: -time.Nanosecond}, "forward_timeout must not be negative"},
		{"forward_timeout too short", MRTRConfig{ForwardTimeout: minMRTRForwardTimeout - time.Nanosecond}, "forward_timeout must be at least"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestMRTRStateToken(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s := mrtrSigner{key: []byte(testSessionKey)}
	st := mrtrState{round: 3, expires: now.Add(time.Minute), principal: principalHash(gateway.Principal{Subject: "alice"}),
		target: targetHash("tools/call", "echo")}
	st.owner[0], st.call[0] = 1, 2
	tok := s.issue(st)
	got, err := s.verify(tok, now)
	if err == nil && got.expires.Equal(st.expires) {
		got.expires = st.expires
	}
	if err != nil || got != st {
		t.Fatalf("verify = %+v, %v; want %+v", got, err, st)
	}
	if got.key() == (mrtrState{call: st.call, round: 4}).key() {
		t.Fatal("two rounds of a call share a single-use key")
	}
	enc, sig, _ := strings.Cut(tok, ".")
	alter := func(s string) string {
		b := []byte(s)
		if b[5] == 'A' {
			b[5] = 'B'
		} else {
			b[5] = 'A'
		}
		return string(b)
	}
	tests := []struct {
		name  string
		token string
		at    time.Time
		key   string
		want  error
	}{
		{"a millisecond before it expires", tok, st.expires.Add(-time.Millisecond), testSessionKey, nil},
		{"when it expires", tok, st.expires, testSessionKey, errStateExpired},
		{"payload altered", alter(enc) + "." + sig, now, testSessionKey, errStateSignature},
		{"signature altered", enc + "." + alter(sig), now, testSessionKey, errStateSignature},
		{"another key", tok, now, strings.Repeat("k", MinSessionKeyBytes), errStateSignature},
		{"no signature", enc, now, testSessionKey, errStateMalformed},
		{"payload cut", enc[1:] + "." + sig, now, testSessionKey, errStateMalformed},
		{"empty", "", now, testSessionKey, errStateMalformed},
		{"a session ID", (&sessionSigner{key: []byte(testSessionKey), ttl: time.Hour, now: func() time.Time { return now }}).issue(sessionOwner{}, 0, ""), now, testSessionKey, errStateMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mrtrSigner{key: []byte(tt.key)}.verify(tt.token, tt.at)
			if !errors.Is(err, tt.want) {
				t.Fatalf("verify = %v, want %v", err, tt.want)
			}
		})
	}
	// A token of another version is not read as this one's.
	p, _ := b64.DecodeString(enc)
	p[0] = mrtrStateVersion + 1
	if _, err := s.verify(b64.EncodeToString(p)+"."+b64.EncodeToString(s.mac(p)), now); !errors.Is(err, errStateMalformed) {
		t.Fatalf("another version: %v", err)
	}
}

// newTestMRTR is a multi round-trip table over kv (nil: a store of its own) with cfg.
func newTestMRTR(t *testing.T, cfg MRTRConfig, kv state.KV) *mrtr {
	t.Helper()
	if kv == nil {
		e := state.NewEmbedded(state.EmbeddedOptions{})
		t.Cleanup(func() { _ = e.Close() })
		kv = e
	}
	m := newMRTR(cfg, []byte(testSessionKey), kv, nil, time.Now, slog.New(slog.DiscardHandler))
	t.Cleanup(m.close)
	return m
}

// peerOf is the peer of the one call m holds.
func peerOf(t *testing.T, m *mrtr) *mrtrPeer {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.calls) != 1 {
		t.Errorf("%d calls held, want 1", len(m.calls))
		return nil
	}
	for _, c := range m.calls {
		return &mrtrPeer{m: m, c: c}
	}
	return nil
}

func alice(state string, responses mcp.InputResponses) mrtrParams {
	return mrtrParams{method: "tools/call", name: "ask", principal: gateway.Principal{Subject: "alice"},
		caps: mcpbackend.PeerCapabilities{Sampling: true, Elicitation: true}, state: state, responses: responses}
}

// answers are the client's answers to an outcome's input requests: for each, the method
// asked and its params, as a result.
func answers(t *testing.T, out mrtrOutcome) mcp.InputResponses {
	t.Helper()
	raw := map[string]json.RawMessage{}
	for id, req := range out.Input {
		var r struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(req, &r); err != nil {
			t.Fatal(err)
		}
		raw[id], _ = json.Marshal(map[string]any{"answered": r.Method, "params": r.Params})
	}
	b, _ := json.Marshal(raw)
	var rs mcp.InputResponses
	if err := json.Unmarshal(b, &rs); err != nil {
		t.Fatal(err)
	}
	return rs
}

// asker is an upstream call asking its caller for what, one request after the other (all
// at once when together), and returning the answers in order.
func asker(t *testing.T, m *mrtr, together bool, what ...string) func(context.Context, func() context.Context) mrtrOutcome {
	return func(ctx context.Context, _ func() context.Context) mrtrOutcome {
		p := peerOf(t, m)
		if p == nil {
			return mrtrOutcome{Err: gateway.NewError(schemas.CodeInternal)}
		}
		got := make([]string, len(what))
		errs := make([]error, len(what))
		ask := func(i int) {
			res, err := p.Request(ctx, what[i], json.RawMessage(`{"n":`+string(rune('0'+i))+`}`))
			got[i], errs[i] = string(res), err
		}
		if together {
			var wg sync.WaitGroup
			for i := range what {
				wg.Go(func() { ask(i) })
			}
			wg.Wait()
		} else {
			for i := range what {
				ask(i)
			}
		}
		if err := errors.Join(errs...); err != nil {
			return mrtrOutcome{Err: gateway.AsError(errs[0])}
		}
		b, _ := json.Marshal(got)
		return mrtrOutcome{Result: b}
	}
}

// TestMRTRRounds: each upstream request becomes an input_required round whose retry
// carries the answer back; the last retry gets the call's result, and nothing stays
// held. Requests made at once may share a round.
func TestMRTRRounds(t *testing.T) {
	for _, together := range []bool{false, true} {
		m := newTestMRTR(t, MRTRConfig{}, nil)
		ctx := context.Background()
		invoke := asker(t, m, together, "sampling/createMessage", "elicitation/create")
		out := m.run(ctx, alice("", nil), invoke)
		rounds := 0
		for out.needsInput() {
			rounds++
			if out.Err != nil || len(out.Input) == 0 || rounds > 2 {
				t.Fatalf("round %d: %+v", rounds, out)
			}
			if m.parkedCount() != 1 {
				t.Fatalf("round %d: %d calls parked", rounds, m.parkedCount())
			}
			out = m.run(ctx, alice(out.State, answers(t, out)), invoke)
		}
		want := `["{\"answered\":\"sampling/createMessage\",\"params\":{\"n\":0}}","{\"answered\":\"elicitation/create\",\"params\":{\"n\":1}}"]`
		if out.Err != nil || string(out.Result) != want {
			t.Fatalf("together=%v: result %s, %v", together, out.Result, out.Err)
		}
		if !together && rounds != 2 {
			t.Fatalf("%d rounds, want 2", rounds)
		}
		if m.heldCount() != 0 || m.parkedCount() != 0 {
			t.Fatalf("after the result: %d held, %d parked", m.heldCount(), m.parkedCount())
		}
	}
}

// altered is token with one character of its payload changed.
func altered(token string) string {
	b := []byte(token)
	if b[3] == 'A' {
		b[3] = 'B'
	} else {
		b[3] = 'A'
	}
	return string(b)
}

func (m *mrtr) parkedCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.parked
}

func (m *mrtr) heldCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.calls)
}

// TestMRTRRetryChecks: a retry naming another caller or request, an altered or replayed
// requestState, and one naming a call no longer held are refused with the reason; the
// refused ones do not use the state up.
func TestMRTRRetryChecks(t *testing.T) {
	m := newTestMRTR(t, MRTRConfig{}, nil)
	ctx := context.Background()
	invoke := asker(t, m, false, "sampling/createMessage")
	first := m.run(ctx, alice("", nil), invoke)
	if !first.needsInput() {
		t.Fatalf("first: %+v", first)
	}
	bob := alice(first.State, answers(t, first))
	bob.principal = gateway.Principal{Subject: "bob"}
	issuer := alice(first.State, answers(t, first))
	issuer.principal = gateway.Principal{Subject: "alice", Claims: map[string]any{"iss": "https://other.example"}}
	prompt := alice(first.State, answers(t, first))
	prompt.method = "prompts/get"
	tool := alice(first.State, answers(t, first))
	tool.name = "other"
	tests := []struct {
		name   string
		p      mrtrParams
		reason string
	}{
		{"another subject", bob, "other_caller"},
		{"another issuer", issuer, "other_caller"},
		{"another method", prompt, "other_request"},
		{"another tool", tool, "other_request"},
		{"altered", alice(altered(first.State), nil), "invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := m.run(ctx, tt.p, invoke)
			if out.Err == nil || out.Err.Code() != schemas.CodeInvalidParams || out.Err.Data()["requestState"] != tt.reason || out.Result != nil {
				t.Fatalf("outcome %+v (%v), want refused as %s", out, out.Err, tt.reason)
			}
		})
	}
	if out := m.run(ctx, alice(first.State, answers(t, first)), invoke); out.Err != nil || out.needsInput() {
		t.Fatalf("the honest retry: %+v, %v", out, out.Err)
	}
	if out := m.run(ctx, alice(first.State, answers(t, first)), invoke); out.Err == nil || out.Err.Data()["requestState"] != "used" {
		t.Fatalf("replayed: %v", out.Err)
	}
	// A state whose single-use record is gone (another store) and whose call ended: lost.
	other := newTestMRTR(t, MRTRConfig{}, nil)
	other.self = m.self
	if out := other.run(ctx, alice(first.State, answers(t, first)), invoke); out.Err == nil || out.Err.Data()["requestState"] != "lost" ||
		!strings.Contains(out.Err.Message(), "start over") {
		t.Fatalf("lost: %v", out.Err)
	}
}

// TestMRTRParkedTimeout: a call whose caller does not retry within parked_timeout is
// ended: the upstream's request gets an error answer, the call's context is cancelled,
// and the late retry is refused as expired.
func TestMRTRParkedTimeout(t *testing.T) {
	m := newTestMRTR(t, MRTRConfig{ParkedTimeout: 50 * time.Millisecond}, nil)
	asked := make(chan error, 1)
	cancelled := make(chan error, 1)
	invoke := func(ctx context.Context, _ func() context.Context) mrtrOutcome {
		_, err := peerOf(t, m).Request(ctx, "sampling/createMessage", json.RawMessage(`{}`))
		asked <- err
		<-ctx.Done()
		cancelled <- ctx.Err()
		return mrtrOutcome{Err: gateway.AsError(ctx.Err())}
	}
	first := m.run(context.Background(), alice("", nil), invoke)
	if !first.needsInput() {
		t.Fatalf("first: %+v", first)
	}
	var ge *gateway.Error
	if err := <-asked; !errors.As(err, &ge) || ge.Code() != schemas.CodeDeadlineExceeded || !strings.Contains(ge.Message(), "parked_timeout") {
		t.Fatalf("the upstream's request was answered %v", err)
	}
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatalf("the call's context: %v", err)
	}
	waitUntil(t, func() bool { return m.heldCount() == 0 && m.parkedCount() == 0 })
	if out := m.run(context.Background(), alice(first.State, answers(t, first)), invoke); out.Err == nil || out.Err.Data()["requestState"] != "expired" {
		t.Fatalf("late retry: %v", out.Err)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestMRTRMaxParked: at max_parked calls parked, an upstream request that would park one
// more gets an error answer at once; a parked call answered frees its place.
func TestMRTRMaxParked(t *testing.T) {
	m := newTestMRTR(t, MRTRConfig{MaxParked: 1}, nil)
	ctx := context.Background()
	var mu sync.Mutex
	var peers []*mrtrPeer
	invoke := func(ctx context.Context, _ func() context.Context) mrtrOutcome {
		mu.Lock()
		p := peers[len(peers)-1]
		mu.Unlock()
		res, err := p.Request(ctx, "elicitation/create", json.RawMessage(`{}`))
		if err != nil {
			return mrtrOutcome{Err: gateway.AsError(err)}
		}
		return mrtrOutcome{Result: res}
	}
	start := func() mrtrOutcome {
		// The peer is taken once start registered the call: the newest one held.
		return m.start(ctx, alice("", nil), func(ctx context.Context, live func() context.Context) mrtrOutcome {
			m.mu.Lock()
			calls := make([]*mrtrCall, 0, len(m.calls))
			for _, c := range m.calls {
				calls = append(calls, c)
			}
			m.mu.Unlock()
			for _, c := range calls {
				if c.liveCtx() != nil { // not the parked one
					mu.Lock()
					peers = append(peers, &mrtrPeer{m: m, c: c})
					mu.Unlock()
				}
			}
			return invoke(ctx, live)
		})
	}
	first := start()
	if !first.needsInput() {
		t.Fatalf("first: %+v", first)
	}
	second := start()
	if second.Err == nil || second.Err.Code() != schemas.CodeOverloaded || second.Err.Data()["reason"] != "max_parked" {
		t.Fatalf("one over max_parked: %+v (%v)", second, second.Err)
	}
	if out := m.run(ctx, alice(first.State, answers(t, first)), invoke); out.Err != nil || out.needsInput() {
		t.Fatalf("retry: %+v (%v)", out, out.Err)
	}
	if third := start(); !third.needsInput() {
		t.Fatalf("after a place was freed: %+v (%v)", third, third.Err)
	}
}

// TestMRTRCallerGoesAway: a caller whose request ends before the call asks or ends
// abandons the call: its context is cancelled.
func TestMRTRCallerGoesAway(t *testing.T) {
	m := newTestMRTR(t, MRTRConfig{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := make(chan error, 1)
	running := make(chan struct{})
	go func() {
		<-running
		cancel()
	}()
	out := m.run(ctx, alice("", nil), func(ctx context.Context, _ func() context.Context) mrtrOutcome {
		close(running)
		<-ctx.Done()
		cancelled <- ctx.Err()
		return mrtrOutcome{}
	})
	if out.Err == nil || out.Err.Code() != schemas.CodeCancelled {
		t.Fatalf("outcome %+v (%v)", out, out.Err)
	}
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatalf("the call's context: %v", err)
	}
	waitUntil(t, func() bool { return m.heldCount() == 0 })
}

// TestMRTRForwarded: two processes share a store and its bus; a retry reaching the one
// that does not hold the call is forwarded to the one that does, and its outcome relayed
// — the next round's, then the result. With the owner gone, the retry is lost within
// forward_timeout.
func TestMRTRForwarded(t *testing.T) {
	kv := state.NewEmbedded(state.EmbeddedOptions{})
	t.Cleanup(func() { _ = kv.Close() })
	cfg := MRTRConfig{ForwardTimeout: 200 * time.Millisecond}
	owner, other := newTestMRTR(t, cfg, kv), newTestMRTR(t, cfg, kv)
	ctx := context.Background()
	invoke := asker(t, owner, false, "sampling/createMessage", "elicitation/create")
	out := owner.run(ctx, alice("", nil), invoke)
	if !out.needsInput() {
		t.Fatalf("first: %+v", out)
	}
	out = other.run(ctx, alice(out.State, answers(t, out)), invoke)
	if !out.needsInput() || out.Err != nil {
		t.Fatalf("second round, through the other process: %+v (%v)", out, out.Err)
	}
	out = other.run(ctx, alice(out.State, answers(t, out)), invoke)
	if out.Err != nil || !strings.Contains(string(out.Result), "elicitation/create") {
		t.Fatalf("result, through the other process: %s (%v)", out.Result, out.Err)
	}
	if other.heldCount() != 0 || owner.heldCount() != 0 {
		t.Fatalf("held after the result: owner %d, other %d", owner.heldCount(), other.heldCount())
	}

	// A refusal by the owner crosses the bus with its code and reason.
	first := owner.run(ctx, alice("", nil), asker(t, owner, false, "sampling/createMessage"))
	cut := alice(first.State, nil) // no answer to the request: the upstream is told so
	out = other.run(ctx, cut, nil)
	if out.Err == nil || out.Err.Code() != schemas.CodeInvalidParams || !strings.Contains(out.Err.Message(), "no answer") {
		t.Fatalf("a retry without the answer: %+v (%v)", out, out.Err)
	}

	gone := owner.run(ctx, alice("", nil), asker(t, owner, false, "sampling/createMessage"))
	owner.close()
	began := time.Now()
	out = other.run(ctx, alice(gone.State, answers(t, gone)), nil)
	if out.Err == nil || out.Err.Data()["requestState"] != "lost" || !strings.Contains(out.Err.Message(), "forward_timeout") {
		t.Fatalf("owner gone: %+v (%v)", out, out.Err)
	}
	if d := time.Since(began); d < cfg.ForwardTimeout {
		t.Fatalf("lost after %v, before forward_timeout", d)
	}
}

// TestMRTRKeepsTheDeadline: the call outlives the request that started it, but keeps the
// deadline that request had.
func TestMRTRKeepsTheDeadline(t *testing.T) {
	m := newTestMRTR(t, MRTRConfig{}, nil)
	dl := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(context.Background(), dl)
	defer cancel()
	out := m.run(ctx, alice("", nil), func(ctx context.Context, _ func() context.Context) mrtrOutcome {
		got, ok := ctx.Deadline()
		return mrtrOutcome{Result: json.RawMessage(strconv.FormatBool(ok && got.Equal(dl)))}
	})
	if string(out.Result) != "true" {
		t.Fatalf("the call's deadline kept: %s", out.Result)
	}
	out = m.run(context.Background(), alice("", nil), func(ctx context.Context, _ func() context.Context) mrtrOutcome {
		_, ok := ctx.Deadline()
		return mrtrOutcome{Result: json.RawMessage(strconv.FormatBool(ok))}
	})
	if string(out.Result) != "false" {
		t.Fatalf("a deadline where the request had none: %s", out.Result)
	}
}
