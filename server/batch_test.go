package server

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func batchOf(n int, method string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"id":%d}`, method, i+1)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func TestBatchConcurrencyBound(t *testing.T) {
	p := &probe{delay: 30 * time.Millisecond}
	ts := start(t, baseConfig+"batch: {max_size: 40, concurrency: 4}\n", probes{"work": p}.asTargets())
	status, _, body := ts.post(batchOf(40, "work"))
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	rs := decodeMany(t, body)
	if len(rs) != 40 {
		t.Fatalf("%d responses", len(rs))
	}
	for i, r := range rs {
		if r.Error != nil || string(r.ID) != fmt.Sprint(i+1) {
			t.Fatalf("response %d out of order or failed: %+v", i, r)
		}
	}
	if got := p.maxRunning.Load(); got != 4 {
		t.Fatalf("at most %d ran at once, want exactly the bound 4", got)
	}
}

func TestBatchDependsOnOrdersMembers(t *testing.T) {
	p := &probe{delay: 20 * time.Millisecond}
	ts := start(t, baseConfig, probes{"step": p}.asTargets())
	// c depends on b, b on a; d is independent. Listed out of order on purpose.
	body := `[
	 {"jsonrpc":"2.0","method":"step","params":{"depends_on":["b"]},"id":"c"},
	 {"jsonrpc":"2.0","method":"step","params":{"depends_on":["a"]},"id":"b"},
	 {"jsonrpc":"2.0","method":"step","id":"a"},
	 {"jsonrpc":"2.0","method":"step","id":"d"}]`
	_, _, out := ts.post(body)
	rs := decodeMany(t, out)
	ids := []string{}
	for _, r := range rs {
		if r.Error != nil {
			t.Fatalf("member failed: %s", out)
		}
		ids = append(ids, string(r.ID))
	}
	if !slices.Equal(ids, []string{`"c"`, `"b"`, `"a"`, `"d"`}) {
		t.Fatalf("responses not in request order: %v", ids)
	}
	log := p.log()
	pos := func(ev string) int { return slices.Index(log, ev) }
	if pos(`end "a"`) >= pos(`start "b"`) || pos(`end "b"`) >= pos(`start "c"`) {
		t.Fatalf("dependencies not respected: %v", log)
	}
	if pos(`start "d"`) > pos(`start "b"`) {
		t.Fatalf("an independent member waited: %v", log)
	}
}

func TestBatchSizePerTier(t *testing.T) {
	cfg := strings.Replace(baseConfig, "anonymous: {}", "anonymous: {tier: enterprise}", 1) +
		"batch: {max_size: 2, tiers: {enterprise: 5}}\n"
	ts := start(t, cfg, nil)
	if _, _, out := ts.post(batchOf(5, "get_data")); len(decodeMany(t, out)) != 5 {
		t.Fatalf("a batch at the tier's limit was not served: %s", out)
	}
	_, _, out := ts.post(batchOf(6, "get_data"))
	r := decodeOne(t, out)
	if r.Error == nil || r.Error.Code != -32600 || r.Error.Data["max"] != float64(5) || r.Error.Data["limit"] != "max_batch_size" {
		t.Fatalf("over the tier's limit: %s", out)
	}
}

func TestBatchSharesOneDeadline(t *testing.T) {
	p := &probe{delay: time.Second}
	ts := start(t, baseConfig+"batch: {concurrency: 1}\n", probes{"slow": p}.asTargets())
	deadline := time.Now().Add(400 * time.Millisecond).UnixMilli()
	began := time.Now()
	// The second member asks for a later deadline: it cannot extend the batch's.
	body := fmt.Sprintf(`[{"jsonrpc":"2.0","method":"slow","id":1},
	  {"jsonrpc":"2.0","method":"slow","params":{"deadline_ms":%d},"id":2}]`, deadline+60_000)
	_, _, out := ts.post(body, "X-Deadline-Ms", fmt.Sprint(deadline))
	if took := time.Since(began); took > 1500*time.Millisecond {
		t.Fatalf("batch took %v with a 400ms deadline", took)
	}
	for _, r := range decodeMany(t, out) {
		if r.Error == nil || r.Error.Code != -32000 {
			t.Fatalf("member %s: want DEADLINE_EXCEEDED, got %s", r.ID, out)
		}
	}
}
