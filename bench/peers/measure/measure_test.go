package measure

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		name, line string
		want       time.Duration
		wantErr    bool
	}{
		{"plain", "1234 (gatehouse) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 8 0 100 0 0", 3 * time.Second, false},
		{"name with spaces and parens", "42 (a (b) c) R 1 42 42 0 -1 0 0 0 0 0 7 3 0 0 20 0", 100 * time.Millisecond, false},
		{"zero", "1 (x) S 0 0 0 0 0 0 0 0 0 0 0 0 0 0", 0, false},
		{"no paren", "1 x S 0 0", 0, true},
		{"too short", "1 (x) S 0 0 0", 0, true},
		{"not a number", "1 (x) S 0 0 0 0 0 0 0 0 0 0 abc 0 0 0", 0, true},
		{"negative", "1 (x) S 0 0 0 0 0 0 0 0 0 0 -5 0 0 0", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStatCPU([]byte(tt.line))
			if tt.wantErr {
				if !errors.Is(err, ErrStatFormat) {
					t.Fatalf("err = %v, want ErrStatFormat", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestProcessCPUSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	before, err := ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Burn CPU until the counter moves (it counts 10 ms ticks).
	deadline := time.Now().Add(10 * time.Second)
	x := 0
	for time.Now().Before(deadline) {
		for i := range 1_000_000 {
			x += i
		}
		after, err := ProcessCPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if after > before {
			return
		}
	}
	t.Fatalf("CPU time did not move (%d)", x)
}

func ms(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x) * time.Millisecond
	}
	return out
}

func TestPercentile(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one", ms(7), 99, 7 * time.Millisecond},
		{"p50 of 1..100", hundred, 50, 50 * time.Millisecond},
		{"p99 of 1..100", hundred, 99, 99 * time.Millisecond},
		{"p100", hundred, 100, 100 * time.Millisecond},
		{"tiny p is the minimum", hundred, 0.001, time.Millisecond},
		{"p50 of four", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"p99 of four", ms(1, 2, 3, 4), 99, 4 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.p); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{
		{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5},
	}
	for _, tt := range tests {
		in := append([]float64(nil), tt.in...)
		if got := Median(in); got != tt.want {
			t.Errorf("Median(%v) = %v, want %v", tt.in, got, tt.want)
		}
		for i := range in {
			if in[i] != tt.in[i] {
				t.Fatalf("Median modified its input: %v", in)
			}
		}
	}
}

func TestClosedLoopCountsCallsAndErrors(t *testing.T) {
	var n atomic.Int64
	boom := errors.New("boom")
	r := ClosedLoop(context.Background(), 4, 200*time.Millisecond, func(_ context.Context, w int) error {
		if w < 0 || w >= 4 {
			t.Errorf("worker %d out of range", w)
		}
		time.Sleep(time.Millisecond)
		if n.Add(1)%4 == 0 {
			return boom
		}
		return nil
	})
	if r.Calls == 0 || r.Errors == 0 || !errors.Is(r.FirstErr, boom) {
		t.Fatalf("result %+v", r)
	}
	if got := r.Calls + r.Errors; got > n.Load() {
		t.Fatalf("counted %d calls, made %d", got, n.Load())
	}
	if r.Rate() <= 0 {
		t.Fatalf("rate %v", r.Rate())
	}
}

func TestOpenLoopKeepsRateAndDropsWhenFull(t *testing.T) {
	r := OpenLoop(context.Background(), 200, 500*time.Millisecond, 64, func(context.Context, int) error { return nil })
	if n := r.Sent + r.Dropped; n < 90 || n > 101 || r.Sent < 50 || len(r.Latencies) != int(r.Sent) {
		t.Fatalf("fast calls: sent %d, dropped %d, latencies %d; want about 100 sent", r.Sent, r.Dropped, len(r.Latencies))
	}
	for i := 1; i < len(r.Latencies); i++ {
		if r.Latencies[i] < r.Latencies[i-1] {
			t.Fatal("latencies not sorted")
		}
	}
	// Calls that take 300 ms on 2 workers: most of 100 scheduled calls find no worker.
	slow := OpenLoop(context.Background(), 200, 500*time.Millisecond, 2, func(context.Context, int) error {
		time.Sleep(300 * time.Millisecond)
		return nil
	})
	if slow.Dropped < 50 || slow.Sent+slow.Dropped < 90 {
		t.Fatalf("slow calls: sent %d, dropped %d", slow.Sent, slow.Dropped)
	}
	if slow.Latencies[0] < 300*time.Millisecond {
		t.Fatalf("latency %v shorter than the call", slow.Latencies[0])
	}
}

func TestReadSSEResponse(t *testing.T) {
	tests := []struct {
		name, stream, id string
		want             string
		wantErr          bool
	}{
		{"one event", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"ok\":true}}\n\n", "3", `{"ok":true}`, false},
		{"notification first", "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":1}\n\n", "3", "1", false},
		{"other id skipped", "data: {\"id\":2,\"result\":0}\n\ndata: {\"id\":3,\"result\":5}\n\n", "3", "5", false},
		{"data split on lines", "data: {\"id\":3,\ndata: \"result\":7}\n\n", "3", "7", false},
		{"no blank line at end", "data: {\"id\":3,\"result\":8}", "3", "8", false},
		{"never answered", "data: {\"id\":2,\"result\":0}\n\n", "3", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := readSSEResponse(strings.NewReader(tt.stream), tt.id)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("want an error, got %s", m.Result)
				}
				return
			}
			if err != nil || string(m.Result) != tt.want {
				t.Fatalf("got %s, %v; want %s", m.Result, err, tt.want)
			}
		})
	}
}
