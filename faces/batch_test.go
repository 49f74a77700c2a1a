package faces

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

func TestPlanBatch(t *testing.T) {
	req := func(id string, deps ...string) jsonrpc.Member {
		m := jsonrpc.Member{Request: jsonrpc.Request{Method: "m", ID: jsonrpc.StringID(id)}}
		for _, d := range deps {
			m.Request.DependsOn = append(m.Request.DependsOn, jsonrpc.StringID(d))
		}
		return m
	}
	tests := []struct {
		name    string
		members []jsonrpc.Member
		failed  []bool
	}{
		{"chain", []jsonrpc.Member{req("a"), req("b", "a"), req("c", "b")}, []bool{false, false, false}},
		{"self cycle", []jsonrpc.Member{req("a", "a"), req("b")}, []bool{true, false}},
		{"three cycle and a dependant", []jsonrpc.Member{req("a", "c"), req("b", "a"), req("c", "b"), req("d", "a")}, []bool{true, true, true, false}},
		{"unknown", []jsonrpc.Member{req("a", "zz"), req("b", "a")}, []bool{true, false}},
		{"ambiguous", []jsonrpc.Member{req("a"), req("a"), req("b", "a")}, []bool{false, false, true}},
		{"diamond", []jsonrpc.Member{req("a"), req("b", "a"), req("c", "a"), req("d", "b", "c")}, []bool{false, false, false, false}},
		// c is on the cycle a→c→b→a, though the search reaches it only after a and b
		{"joining a cycle through a member already visited", []jsonrpc.Member{req("a", "b", "c"), req("b", "a"), req("c", "b")}, []bool{true, true, true}},
		{"two cycles and a bridge", []jsonrpc.Member{req("a", "b"), req("b", "a"), req("c", "d", "a"), req("d", "c")}, []bool{true, true, true, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := planBatch(tt.members)
			for i, want := range tt.failed {
				if got := p.err[i] != nil; got != want {
					t.Errorf("member %d failed=%v, want %v (%v)", i, got, want, p.err[i])
				}
			}
		})
	}
}

// TestPlanBatchCyclesAgainstReachability: on random dependency graphs, a member fails as
// on a cycle exactly when it reaches itself.
func TestPlanBatchCyclesAgainstReachability(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2)) // reproducible graphs
	for range 2000 {
		n := 1 + rng.IntN(8)
		members := make([]jsonrpc.Member, n)
		deps := make([][]int, n)
		for i := range members {
			members[i] = jsonrpc.Member{Request: jsonrpc.Request{Method: "m", ID: jsonrpc.StringID(strconv.Itoa(i))}}
			for j := range n {
				if rng.IntN(4) == 0 {
					deps[i] = append(deps[i], j)
					members[i].Request.DependsOn = append(members[i].Request.DependsOn, jsonrpc.StringID(strconv.Itoa(j)))
				}
			}
		}
		p := planBatch(members)
		for i := range n {
			seen := make([]bool, n)
			var reach func(k int) bool
			reach = func(k int) bool {
				for _, j := range deps[k] {
					if j == i {
						return true
					}
					if !seen[j] {
						seen[j] = true
						if reach(j) {
							return true
						}
					}
				}
				return false
			}
			if want := reach(i); (p.err[i] != nil) != want {
				t.Fatalf("graph %v: member %d failed=%v, on a cycle=%v", deps, i, p.err[i] != nil, want)
			}
		}
	}
}

// batchPipeline is a pipeline whose handler answers "echo" with its id, fails "fail",
// panics on "boom", sleeps on "slow", and records how many calls ran at once.
func batchPipeline(concurrency int, peak *atomic.Int32) *Pipeline {
	var running atomic.Int32
	return &Pipeline{
		BatchConcurrency: concurrency,
		Limits:           jsonrpc.Limits{MaxBatch: 200},
		Now:              time.Now,
		Log:              slog.New(slog.DiscardHandler),
		Handler: func(_ context.Context, c *gateway.Call) (*gateway.Result, error) {
			n := running.Add(1)
			defer running.Add(-1)
			for {
				if p := peak.Load(); n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			switch c.Method {
			case "fail":
				return nil, gateway.NewError(schemas.CodeInvalidParams)
			case "boom":
				panic("boom")
			case "slow":
				time.Sleep(5 * time.Millisecond)
			}
			return gateway.NewResult([]byte(c.ID.Raw())), nil
		},
	}
}

func TestRunBatch(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"in order",
			`[{"jsonrpc":"2.0","method":"slow","id":1},{"jsonrpc":"2.0","method":"echo","id":"b"},{"jsonrpc":"2.0","method":"echo","id":3}]`,
			`[{"jsonrpc":"2.0","result":1,"id":1},{"jsonrpc":"2.0","result":"b","id":"b"},{"jsonrpc":"2.0","result":3,"id":3}]`},
		{"notification silent",
			`[{"jsonrpc":"2.0","method":"echo"},{"jsonrpc":"2.0","method":"echo","id":2}]`,
			`[{"jsonrpc":"2.0","result":2,"id":2}]`},
		{"panic recovered per member",
			`[{"jsonrpc":"2.0","method":"boom","id":1},{"jsonrpc":"2.0","method":"echo","id":2}]`,
			`[{"jsonrpc":"2.0","error":{"code":-32603,`, // then member 2 answered
		},
		{"bad member",
			`[{"jsonrpc":"2.0","method":1,"id":1},{"jsonrpc":"2.0","method":"echo","id":2}]`,
			`[{"jsonrpc":"2.0","error":{"code":-32600,`},
		{"depends_on",
			`[{"jsonrpc":"2.0","method":"echo","params":{"depends_on":[2]},"id":1},{"jsonrpc":"2.0","method":"slow","id":2}]`,
			`[{"jsonrpc":"2.0","result":1,"id":1},{"jsonrpc":"2.0","result":2,"id":2}]`},
		{"dependency failed",
			`[{"jsonrpc":"2.0","method":"fail","id":1},{"jsonrpc":"2.0","method":"echo","params":{"depends_on":[1]},"id":2}]`,
			`"code":-32025,`},
	}
	for _, conc := range []int{1, 4} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/c%d", tt.name, conc), func(t *testing.T) {
				var peak atomic.Int32
				p := batchPipeline(conc, &peak)
				got := string(p.Serve(context.Background(), &Exchange{TraceID: "t"}, []byte(tt.body), nil))
				if !strings.Contains(got, tt.want) {
					t.Errorf("got %s\nwant %s", got, tt.want)
				}
				if strings.HasPrefix(tt.name, "panic") || strings.HasPrefix(tt.name, "bad") {
					if !strings.Contains(got, `{"jsonrpc":"2.0","result":2,"id":2}]`) {
						t.Errorf("the other member: %s", got)
					}
				}
			})
		}
	}
}

func TestRunBatchConcurrencyBound(t *testing.T) {
	parts := make([]string, 40)
	for i := range parts {
		parts[i] = fmt.Sprintf(`{"jsonrpc":"2.0","method":"slow","id":%d}`, i)
	}
	body := []byte("[" + strings.Join(parts, ",") + "]")
	for _, conc := range []int{1, 3, 16, 100} {
		var peak atomic.Int32
		p := batchPipeline(conc, &peak)
		got := string(p.Serve(context.Background(), &Exchange{TraceID: "t"}, body, nil))
		for i := range parts {
			if want := fmt.Sprintf(`{"jsonrpc":"2.0","result":%d,"id":%d}`, i, i); !strings.Contains(got, want) {
				t.Fatalf("c%d: missing %s in %s", conc, want, got)
			}
		}
		if limit := min(conc, len(parts)); int(peak.Load()) > limit || (limit > 1 && peak.Load() < 2) {
			t.Errorf("c%d: %d ran at once", conc, peak.Load())
		}
	}
}

func TestRunBatchCancelled(t *testing.T) {
	var peak atomic.Int32
	p := batchPipeline(1, &peak)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got := string(p.Serve(ctx, &Exchange{TraceID: "t"}, []byte(`[{"jsonrpc":"2.0","method":"echo","id":1},{"jsonrpc":"2.0","method":"echo"}]`), nil))
	if !strings.Contains(got, `"layer":"batch"`) || peak.Load() != 0 {
		t.Errorf("cancelled batch ran: %s", got)
	}
}
