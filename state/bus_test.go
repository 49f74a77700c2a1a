package state_test

import (
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/redistest"
	"github.com/gatehouse-dev/gatehouse/state"
	"github.com/gatehouse-dev/gatehouse/state/statetest"
)

func TestEmbeddedBus(t *testing.T) {
	statetest.RunBus(t, func(*testing.T) statetest.BusKV { return state.NewEmbedded(state.EmbeddedOptions{}) })
}

func TestEmbeddedBusBuffer(t *testing.T) {
	e := state.NewEmbedded(state.EmbeddedOptions{BusBuffer: 3})
	defer e.Close()
	s, err := e.Subscribe(t.Context(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if got := cap(s.C()); got != 3 {
		t.Errorf("cap(C()) = %d, want the configured 3", got)
	}
	for _, m := range []string{"1", "2", "3", "4", "5"} {
		if err := e.Publish(t.Context(), "c", []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"3", "4", "5"} { // 1 and 2 dropped, oldest first
		if got := string(<-s.C()); got != want {
			t.Errorf("received %q, want %q", got, want)
		}
	}
}

func TestRedisBus(t *testing.T) {
	srv := redistest.Start(t)
	statetest.RunBus(t, func(t *testing.T) statetest.BusKV { return newRedis(t, srv, state.RedisConfig{}) })
}

// TestRedisBusAcrossReplicas checks that two Redis KVs with the same prefix, as two
// replicas have, share channels, and that another prefix does not.
func TestRedisBusAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	prefix := srv.Prefix(t)
	a := newRedis(t, srv, state.RedisConfig{KeyPrefix: prefix})
	b := newRedis(t, srv, state.RedisConfig{KeyPrefix: prefix})
	other := newRedis(t, srv, state.RedisConfig{KeyPrefix: prefix + "other:"})
	ctx := t.Context()
	subA, err := a.Subscribe(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	defer subA.Close()
	subOther, err := other.Subscribe(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	defer subOther.Close()
	if err := other.Publish(ctx, "events", []byte("other deployment")); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(ctx, "events", []byte("from b")); err != nil {
		t.Fatal(err)
	}
	if got := statetest.Receive(t, subA); string(got) != "from b" {
		t.Errorf("replica a received %q, want %q (and nothing from another prefix)", got, "from b")
	}
	if got := statetest.Receive(t, subOther); string(got) != "other deployment" {
		t.Errorf("the other deployment received %q first, want its own message", got)
	}
}

// TestRedisBusReconnect kills and restarts Redis under a subscription: it must deliver one
// nil message once it has subscribed again, then messages as before.
func TestRedisBusReconnect(t *testing.T) {
	srv := redistest.Start(t)
	prefix := srv.Prefix(t)
	sub := newRedis(t, srv, state.RedisConfig{KeyPrefix: prefix})
	pub := newRedis(t, srv, state.RedisConfig{KeyPrefix: prefix})
	ctx := t.Context()
	s, err := sub.Subscribe(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := pub.Publish(ctx, "c", []byte("before")); err != nil {
		t.Fatal(err)
	}
	if got := statetest.Receive(t, s); string(got) != "before" {
		t.Fatalf("received %q, want before", got)
	}

	srv.Kill()
	srv.Restart(t)
	select {
	case m, ok := <-s.C():
		if !ok || m != nil {
			t.Fatalf("first delivery after the restart = %q, %v; want a nil message", m, ok)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("no nil message within 20s of the restart")
	}
	// The publisher's pool may take a probe to find Redis back.
	deadline := time.Now().Add(15 * time.Second)
	for pub.Publish(ctx, "c", []byte("after")) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("Publish still failing 15s after the restart")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := statetest.Receive(t, s); string(got) != "after" {
		t.Errorf("received %q after the reconnection, want after", got)
	}
}

// TestRedisBusHealthCheck runs a subscription with a short health interval: idle PINGs
// must not look like reconnections, and a server that stops answering without closing the
// connection (paused) must be noticed, the connection replaced once it answers again, and
// one nil message delivered.
func TestRedisBusHealthCheck(t *testing.T) {
	srv := redistest.Start(t)
	prefix := srv.Prefix(t)
	sub := newRedis(t, srv, state.RedisConfig{KeyPrefix: prefix, ReadTimeout: 300 * time.Millisecond})
	pub := newRedis(t, srv, state.RedisConfig{KeyPrefix: prefix})
	const health = 100 * time.Millisecond
	state.SetBusHealthInterval(sub, health)
	ctx := t.Context()
	s, err := sub.Subscribe(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	time.Sleep(10 * health) // several idle PINGs, all answered
	if err := pub.Publish(ctx, "c", []byte("idle")); err != nil {
		t.Fatal(err)
	}
	if got := statetest.Receive(t, s); got == nil || string(got) != "idle" {
		t.Fatalf("received %q (nil: %v) after an idle spell, want idle: answered PINGs are no reconnection", got, got == nil)
	}

	srv.Pause()
	time.Sleep(10 * health) // the PING goes unanswered; go-redis drops the connection
	srv.Resume()
	select {
	case m, ok := <-s.C():
		if !ok || m != nil {
			t.Fatalf("first delivery after the pause = %q, %v; want a nil message", m, ok)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("no nil message within 20s of the server answering again")
	}
	if err := pub.Publish(ctx, "c", []byte("after")); err != nil {
		t.Fatal(err)
	}
	if got := statetest.Receive(t, s); string(got) != "after" {
		t.Errorf("received %q after the reconnection, want after", got)
	}
}

// TestOpenAppliesBusBuffer checks that bus_buffer reaches both backends' subscriptions.
func TestOpenAppliesBusBuffer(t *testing.T) {
	srv := redistest.Start(t)
	for _, cfg := range []state.Config{
		{Embedded: state.EmbeddedConfig{BusBuffer: 5}},
		{Backend: "redis", Redis: state.RedisConfig{Addrs: []string{srv.Addr}, KeyPrefix: srv.Prefix(t), BusBuffer: 5}},
	} {
		kv, err := state.Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s, err := kv.(state.Bus).Subscribe(t.Context(), "c")
		if err != nil {
			t.Fatal(err)
		}
		if got := cap(s.C()); got != 5 {
			t.Errorf("%T: cap(C()) = %d, want bus_buffer 5", kv, got)
		}
		_ = kv.Close()
	}
}
