package statetest

import (
	"context"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/state"
)

// ruleCases cover the rules every method shares: TTLs required, size limits, done
// contexts, Close.
var ruleCases = []testCase{
	{"NoTTL", func(t *kvt) {
		present := t.key()
		t.set(present, "v", never)
		for _, ttl := range []time.Duration{0, -time.Nanosecond, -time.Hour} {
			k := t.key()
			v := []byte("v")
			err := t.kv.Set(t.ctx, k, v, ttl)
			t.wantErr("Set ttl "+ttl.String(), err, state.ErrNoTTL)
			_, err = t.kv.SetNX(t.ctx, k, v, ttl)
			t.wantErr("SetNX ttl "+ttl.String(), err, state.ErrNoTTL)
			_, err = t.kv.CompareAndSwap(t.ctx, k, nil, v, ttl)
			t.wantErr("CompareAndSwap create ttl "+ttl.String(), err, state.ErrNoTTL)
			_, err = t.kv.Incr(t.ctx, k, 1, ttl)
			t.wantErr("Incr ttl "+ttl.String(), err, state.ErrNoTTL)
			t.wantAbsent(k)
			_, err = t.kv.CompareAndSwap(t.ctx, present, v, []byte("w"), ttl)
			t.wantErr("CompareAndSwap replace ttl "+ttl.String(), err, state.ErrNoTTL)
			_, err = t.kv.CompareAndSwap(t.ctx, present, v, nil, ttl)
			t.wantErr("CompareAndSwap delete ttl "+ttl.String(), err, state.ErrNoTTL)
			t.wantValue(present, "v")
		}
	}},
	{"KeyLimit", func(t *kvt) {
		limit := t.limits().MaxKeyBytes
		at, counter, over := t.keyOfLen(limit), t.keyOfLen(limit), t.keyOfLen(limit+1)
		t.set(at, "v", never)
		t.wantValue(at, "v")
		if t.setNX(at, "w", never) {
			t.Errorf("SetNX(present key of the limit's length) = true")
		}
		if !t.cas(at, []byte("v"), []byte("w"), never) {
			t.Errorf("CompareAndSwap(key of the limit's length) = false")
		}
		if got := t.incr(counter, 2, never); got != 2 {
			t.Errorf("Incr(key of the limit's length) = %d, want 2", got)
		}
		if !t.del(at) {
			t.Errorf("Delete(key of the limit's length) = false")
		}

		v := []byte("v")
		_, _, err := t.kv.Get(t.ctx, over)
		t.wantErr("Get over the key limit", err, state.ErrTooLarge)
		err = t.kv.Set(t.ctx, over, v, never)
		t.wantErr("Set over the key limit", err, state.ErrTooLarge)
		_, err = t.kv.SetNX(t.ctx, over, v, never)
		t.wantErr("SetNX over the key limit", err, state.ErrTooLarge)
		_, err = t.kv.CompareAndSwap(t.ctx, over, nil, v, never)
		t.wantErr("CompareAndSwap over the key limit", err, state.ErrTooLarge)
		_, err = t.kv.Incr(t.ctx, over, 1, never)
		t.wantErr("Incr over the key limit", err, state.ErrTooLarge)
		_, err = t.kv.Delete(t.ctx, over)
		t.wantErr("Delete over the key limit", err, state.ErrTooLarge)
	}},
	{"ValueLimit", func(t *kvt) {
		limit := t.limits().MaxValueBytes
		at, over := strings.Repeat("a", limit), []byte(strings.Repeat("b", limit+1))
		k1, k2, k3 := t.key(), t.key(), t.key()
		t.set(k1, at, never)
		t.wantValue(k1, at)
		if !t.setNX(k2, at, never) {
			t.Errorf("SetNX(value of the limit's length) = false")
		}
		if !t.cas(k3, nil, []byte(at), never) {
			t.Errorf("CompareAndSwap(value of the limit's length) = false")
		}

		k4 := t.key()
		err := t.kv.Set(t.ctx, k1, over, never)
		t.wantErr("Set over the value limit", err, state.ErrTooLarge)
		_, err = t.kv.SetNX(t.ctx, k4, over, never)
		t.wantErr("SetNX over the value limit", err, state.ErrTooLarge)
		_, err = t.kv.CompareAndSwap(t.ctx, k4, nil, over, never)
		t.wantErr("CompareAndSwap new over the value limit", err, state.ErrTooLarge)
		_, err = t.kv.CompareAndSwap(t.ctx, k1, over, []byte("x"), never)
		t.wantErr("CompareAndSwap old over the value limit", err, state.ErrTooLarge)
		t.wantValue(k1, at)
		t.wantAbsent(k4)
	}},
	{"ContextDone", func(t *kvt) {
		cancelled, cancel := context.WithCancel(t.ctx)
		cancel()
		expired, cancel2 := context.WithDeadline(t.ctx, time.Now().Add(-time.Second))
		defer cancel2()
		for _, ctx := range []context.Context{cancelled, expired} {
			want := ctx.Err()
			k, present := t.key(), t.key()
			t.set(present, "1", never)
			v := []byte("v")
			_, _, err := t.kv.Get(ctx, present)
			t.wantErr("Get", err, want)
			err = t.kv.Set(ctx, k, v, never)
			t.wantErr("Set", err, want)
			_, err = t.kv.SetNX(ctx, k, v, never)
			t.wantErr("SetNX", err, want)
			_, err = t.kv.CompareAndSwap(ctx, k, nil, v, never)
			t.wantErr("CompareAndSwap", err, want)
			_, err = t.kv.Incr(ctx, present, 1, never)
			t.wantErr("Incr", err, want)
			_, err = t.kv.Delete(ctx, present)
			t.wantErr("Delete", err, want)
			t.wantAbsent(k)
			t.wantValue(present, "1")
		}
	}},
	{"Close", func(t *kvt) {
		k := t.key()
		t.set(k, "v", never)
		if err := t.kv.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		v := []byte("v")
		_, _, err := t.kv.Get(t.ctx, k)
		t.wantErr("Get after Close", err, state.ErrClosed)
		err = t.kv.Set(t.ctx, k, v, never)
		t.wantErr("Set after Close", err, state.ErrClosed)
		_, err = t.kv.SetNX(t.ctx, k, v, never)
		t.wantErr("SetNX after Close", err, state.ErrClosed)
		_, err = t.kv.CompareAndSwap(t.ctx, k, v, nil, never)
		t.wantErr("CompareAndSwap after Close", err, state.ErrClosed)
		_, err = t.kv.Incr(t.ctx, k, 1, never)
		t.wantErr("Incr after Close", err, state.ErrClosed)
		_, err = t.kv.Delete(t.ctx, k)
		t.wantErr("Delete after Close", err, state.ErrClosed)
		t.wantErr("second Close", t.kv.Close(), state.ErrClosed)
	}},
}
