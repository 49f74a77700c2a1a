package statetest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/state"
)

// BusKV is a KV that is also a Bus, such as both backends.
type BusKV interface {
	state.KV
	state.Bus
}

// waitMsg bounds how long a test waits for a message that must come, or for a channel
// that must close: generous, since a loaded machine may be slow.
const waitMsg = 5 * time.Second

// bust is a Bus subtest with helpers.
type bust struct {
	*testing.T
	kv  BusKV
	ctx context.Context
}

type busCase struct {
	name string
	run  func(t *bust)
}

// RunBus runs the contract suite of [state.Bus], one parallel subtest per rule, each on a
// KV that open returns, as [RunKV] does: open must return a new, open KV on every call; KVs
// of separate calls may share a server, since every subtest uses channel names of its own.
// It takes a few seconds of wall time at most.
func RunBus(t *testing.T, open func(t *testing.T) BusKV) {
	t.Helper()
	for _, c := range busCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			kv := open(t)
			t.Cleanup(func() { _ = kv.Close() })
			c.run(&bust{T: t, kv: kv, ctx: t.Context()})
		})
	}
}

func (t *bust) channel() string {
	return fmt.Sprintf("statetest:bus:%s:%d", runID, keySeq.Add(1))
}

func (t *bust) subscribe(channel string) state.Subscription {
	t.Helper()
	s, err := t.kv.Subscribe(t.ctx, channel)
	if err != nil {
		t.Fatalf("Subscribe(%q): %v", channel, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func (t *bust) publish(channel, msg string) {
	t.Helper()
	if err := t.kv.Publish(t.ctx, channel, []byte(msg)); err != nil {
		t.Fatalf("Publish(%q, %q): %v", channel, msg, err)
	}
}

// Receive returns the next message of s, failing the test when none comes within a few
// seconds or C is closed. It is exported for backend-specific tests.
func Receive(t testing.TB, s state.Subscription) []byte {
	t.Helper()
	select {
	case m, ok := <-s.C():
		if !ok {
			t.Fatalf("C closed while a message was expected")
		}
		return m
	case <-time.After(waitMsg):
		t.Fatalf("no message within %v", waitMsg)
		return nil
	}
}

// want checks that the next messages of s are msgs, in order.
func (t *bust) want(s state.Subscription, msgs ...string) {
	t.Helper()
	for _, w := range msgs {
		got := Receive(t, s)
		if got == nil || string(got) != w {
			t.Fatalf("received %q (nil: %v), want %q", got, got == nil, w)
		}
	}
}

// wantClosed checks that C closes soon, draining what is left.
func wantClosed(t testing.TB, s state.Subscription) {
	t.Helper()
	deadline := time.After(waitMsg)
	for {
		select {
		case _, ok := <-s.C():
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("C not closed within %v", waitMsg)
		}
	}
}

var busCases = []busCase{
	{"DeliveryByChannelInOrder", func(t *bust) {
		a, b := t.channel(), t.channel()
		a1, a2, b1 := t.subscribe(a), t.subscribe(a), t.subscribe(b)
		var msgs []string
		for i := range 20 {
			msgs = append(msgs, "m"+strconv.Itoa(i))
			t.publish(a, msgs[i])
		}
		t.publish(b, "for b")
		t.want(b1, "for b") // nothing published on a reached b
		t.want(a1, msgs...)
		t.want(a2, msgs...)
		t.publish(a, "last")
		t.want(a1, "last") // "for b" did not reach a
		t.want(a2, "last")
	}},
	{"OnlyAfterSubscribe", func(t *bust) {
		c := t.channel()
		t.publish(c, "before")
		s := t.subscribe(c)
		t.publish(c, "after")
		t.want(s, "after")
	}},
	{"NoSubscriber", func(t *bust) {
		t.publish(t.channel(), "nobody listens")
	}},
	{"EmptyMessageIsNotNil", func(t *bust) {
		c := t.channel()
		s := t.subscribe(c)
		if err := t.kv.Publish(t.ctx, c, nil); err != nil {
			t.Fatal(err)
		}
		t.publish(c, "")
		for range 2 {
			if got := Receive(t, s); got == nil || len(got) != 0 {
				t.Fatalf("received %q (nil: %v), want a non-nil empty message: nil means reconnected", got, got == nil)
			}
		}
	}},
	{"Copies", func(t *bust) {
		c := t.channel()
		s1, s2 := t.subscribe(c), t.subscribe(c)
		buf := []byte("hello")
		if err := t.kv.Publish(t.ctx, c, buf); err != nil {
			t.Fatal(err)
		}
		copy(buf, "XXXXX")
		got := Receive(t, s1)
		if string(got) != "hello" {
			t.Fatalf("received %q, want hello: Publish must copy", got)
		}
		copy(got, "YYYYY")
		t.want(s2, "hello")
	}},
	{"CloseClosesC", func(t *bust) {
		c := t.channel()
		s, other := t.subscribe(c), t.subscribe(c)
		t.publish(c, "1")
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		wantClosed(t, s)
		if err := s.Close(); err != nil {
			t.Errorf("second Close: %v, want nil (idempotent)", err)
		}
		t.publish(c, "2") // a closed subscriber is skipped
		t.want(other, "1", "2")
	}},
	{"ContextEnds", func(t *bust) {
		c := t.channel()
		ctx, cancel := context.WithCancel(t.ctx)
		s, err := t.kv.Subscribe(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		wantClosed(t, s)
		if err := s.Close(); err != nil {
			t.Errorf("Close after the context ended it: %v", err)
		}
	}},
	{"DoneContext", func(t *bust) {
		ctx, cancel := context.WithCancel(t.ctx)
		cancel()
		_, err := t.kv.Subscribe(ctx, t.channel())
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Subscribe with a cancelled context: %v, want context.Canceled", err)
		}
		err = t.kv.Publish(ctx, t.channel(), []byte("x"))
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Publish with a cancelled context: %v, want context.Canceled", err)
		}
	}},
	{"Limits", func(t *bust) {
		l := state.DefaultLimits()
		if lim, ok := t.kv.(state.Limited); ok {
			l = lim.Limits()
		}
		long := strings.Repeat("c", l.MaxKeyBytes+1)
		_, err := t.kv.Subscribe(t.ctx, long)
		if !errors.Is(err, state.ErrTooLarge) {
			t.Errorf("Subscribe over the key limit: %v, want ErrTooLarge", err)
		}
		if err := t.kv.Publish(t.ctx, long, []byte("x")); !errors.Is(err, state.ErrTooLarge) {
			t.Errorf("Publish on a channel over the key limit: %v, want ErrTooLarge", err)
		}
		big := make([]byte, l.MaxValueBytes+1)
		if err := t.kv.Publish(t.ctx, t.channel(), big); !errors.Is(err, state.ErrTooLarge) {
			t.Errorf("Publish over the value limit: %v, want ErrTooLarge", err)
		}
	}},
	{"SlowSubscriberDrops", testSlowSubscriber},
	{"StoreClose", func(t *bust) {
		c := t.channel()
		s := t.subscribe(c)
		if err := t.kv.Close(); err != nil {
			t.Fatal(err)
		}
		wantClosed(t, s)
		if _, err := t.kv.Subscribe(t.ctx, c); !errors.Is(err, state.ErrClosed) {
			t.Errorf("Subscribe after Close: %v, want ErrClosed", err)
		}
		if err := t.kv.Publish(t.ctx, c, []byte("x")); !errors.Is(err, state.ErrClosed) {
			t.Errorf("Publish after Close: %v, want ErrClosed", err)
		}
	}},
}

// testSlowSubscriber publishes four times C's capacity to a subscriber that does not read:
// Publish must not block, the oldest messages must go and the newest stay, in order.
func testSlowSubscriber(t *bust) {
	for attempt := 1; ; attempt++ {
		c := t.channel()
		slow, fast := t.subscribe(c), t.subscribe(c)
		size := cap(slow.C())
		if size <= 0 {
			t.Fatalf("cap(C()) = %d: C must be buffered", size)
		}
		total := 4*size + 10
		// The fast subscriber, read as it goes, proves every message went out.
		for i := range total {
			t.publish(c, strconv.Itoa(i))
			if got := Receive(t, fast); string(got) != strconv.Itoa(i) {
				t.Fatalf("fast subscriber: message %d is %q", i, got)
			}
		}
		got := drainUntil(t, slow, strconv.Itoa(total-1))
		if len(got) < total {
			checkIncreasing(t, got)
			return
		}
		// Every message got through: the backend read them as slowly as they came, which
		// a loaded machine may cause. Try again; a backend that never drops fails.
		if attempt == 3 {
			t.Fatalf("a subscriber that did not read received all %d messages three times: nothing dropped", total)
		}
	}
}

// drainUntil reads s until it receives last, and returns what it received.
func drainUntil(t *bust, s state.Subscription, last string) []int {
	t.Helper()
	var got []int
	for {
		m := Receive(t, s)
		n, err := strconv.Atoi(string(m))
		if err != nil {
			t.Fatalf("received %q, want a number", m)
		}
		got = append(got, n)
		if string(m) == last {
			return got
		}
	}
}

func checkIncreasing(t *bust, got []int) {
	t.Helper()
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("received %v: out of order", got)
		}
	}
}
