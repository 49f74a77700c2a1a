package statetest

import (
	"math"
	"strconv"
	"time"

	"github.com/gatehouse-dev/gatehouse/state"
)

// incrCases cover counters.
var incrCases = []testCase{
	{"IncrCreatesAndAccumulates", func(t *kvt) {
		k := t.key()
		for _, step := range []struct{ delta, want int64 }{{5, 5}, {3, 8}, {-10, -2}, {0, -2}} {
			if got := t.incr(k, step.delta, never); got != step.want {
				t.Errorf("Incr(%d) = %d, want %d", step.delta, got, step.want)
			}
		}
		t.wantValue(k, "-2")
	}},
	{"IncrZeroCreates", func(t *kvt) {
		k := t.key()
		if got := t.incr(k, 0, never); got != 0 {
			t.Errorf("Incr(absent, 0) = %d, want 0", got)
		}
		t.wantValue(k, "0")
	}},
	{"IncrAfterDelete", func(t *kvt) {
		k := t.key()
		t.incr(k, 7, never)
		t.del(k)
		if got := t.incr(k, 1, never); got != 1 {
			t.Errorf("Incr(deleted, 1) = %d, want 1", got)
		}
	}},
	{"IncrDecimalValues", func(t *kvt) {
		tests := []struct {
			value string
			delta int64
			want  int64
		}{
			{"41", 1, 42},
			{"-7", 7, 0},
			{"0", -1, -1},
			{strconv.FormatInt(math.MaxInt64-1, 10), 1, math.MaxInt64},
			{strconv.FormatInt(math.MinInt64+1, 10), -1, math.MinInt64},
			{strconv.FormatInt(math.MinInt64, 10), math.MaxInt64, -1},
		}
		for _, tt := range tests {
			k := t.key()
			t.set(k, tt.value, never)
			if got := t.incr(k, tt.delta, never); got != tt.want {
				t.Errorf("Set %q, Incr(%d) = %d, want %d", tt.value, tt.delta, got, tt.want)
			}
			t.wantValue(k, strconv.FormatInt(tt.want, 10))
		}
	}},
	{"IncrNotInteger", func(t *kvt) {
		values := []string{
			"", "abc", "1.5", " 1", "1 ", "+1", "01", "00", "-0", "-", "--1", "0x10", "1e3", "1_000",
			"\uff11", "9223372036854775808", "-9223372036854775809", "99999999999999999999",
		}
		for _, v := range values {
			k := t.key()
			t.set(k, v, never)
			_, err := t.kv.Incr(t.ctx, k, 1, never)
			t.wantErr("Incr on "+strconv.Quote(v), err, state.ErrNotInteger)
			t.wantValue(k, v)
		}
	}},
	{"IncrOverflow", func(t *kvt) {
		tests := []struct {
			value string
			delta int64
		}{
			{strconv.FormatInt(math.MaxInt64, 10), 1},
			{"1", math.MaxInt64},
			{strconv.FormatInt(math.MinInt64, 10), -1},
			{"-2", math.MinInt64},
		}
		for _, tt := range tests {
			k := t.key()
			t.set(k, tt.value, never)
			_, err := t.kv.Incr(t.ctx, k, tt.delta, never)
			t.wantErr("Incr("+tt.value+", "+strconv.FormatInt(tt.delta, 10)+")", err, state.ErrNotInteger)
			t.wantValue(k, tt.value)
		}
	}},
	{"IncrDoesNotExtendTTL", func(t *kvt) {
		t.timed(func(start time.Time) bool {
			k := t.key()
			t.incr(k, 1, long)
			written := time.Now()
			time.Sleep(long / 4)
			got := t.incr(k, 1, never) // a longer ttl must not replace the counter's
			if !within(start, long/2) {
				return false
			}
			if got != 2 {
				t.Errorf("second Incr = %d, want 2", got)
			}
			sleepUntil(written, long+slack)
			t.wantAbsent(k)
			if got := t.incr(k, 1, never); got != 1 {
				t.Errorf("Incr after expiry = %d, want 1 (a new counter)", got)
			}
			return true
		})
	}},
	{"IncrKeepsSetTTL", func(t *kvt) {
		t.timed(func(start time.Time) bool {
			k := t.key()
			t.set(k, "5", long)
			written := time.Now()
			got := t.incr(k, 1, never)
			if !within(start, long/2) {
				return false
			}
			if got != 6 {
				t.Errorf("Incr after Set = %d, want 6", got)
			}
			sleepUntil(written, long+slack)
			t.wantAbsent(k)
			return true
		})
	}},
}
