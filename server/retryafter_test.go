package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/faces"
)

// TestShedOverHTTP: a call the admission stage sheds reaches an HTTP caller as 503 with
// Retry-After (in JSON and MessagePack); a batch of shed calls as 200.
func TestShedOverHTTP(t *testing.T) {
	p := &probe{delay: 30 * time.Second, started: make(chan string, 1)}
	ts := start(t, baseConfig+`
admission:
  global: {initial_limit: 1, min_limit: 1, max_limit: 1}
`, probes{"slow": p}.asTargets())
	ctx, cancel := context.WithCancel(context.Background())
	held := ts.callAsync(ctx, `{"jsonrpc":"2.0","method":"slow","id":1}`)
	<-p.started
	defer func() {
		cancel()
		receive(t, held)
	}()

	status, hdr, body := ts.post(`{"jsonrpc":"2.0","method":"slow","id":2}`)
	r := decodeOne(t, body)
	if status != http.StatusServiceUnavailable || r.Error == nil || r.Error.Code != 5002 || r.Error.Data["reason"] != "global_limit" {
		t.Fatalf("single shed call: HTTP %d %s", status, body)
	}
	if hdr.Get("Retry-After") != "1" || hdr.Get("Content-Type") != faces.JSONContentType {
		t.Errorf("headers %v, want Retry-After: 1 and JSON", hdr)
	}

	status, hdr, raw := ts.postMsgpack(mpFromJSON(t, `{"jsonrpc":"2.0","method":"slow","id":3}`))
	if status != http.StatusServiceUnavailable || hdr.Get("Retry-After") != "1" || !strings.Contains(mpToJSON(t, raw), `"code":5002`) {
		t.Errorf("MessagePack: HTTP %d, Retry-After %q, %s", status, hdr.Get("Retry-After"), mpToJSON(t, raw))
	}

	status, hdr, body = ts.post(`[{"jsonrpc":"2.0","method":"slow","id":4},{"jsonrpc":"2.0","method":"slow","id":5}]`)
	var batch []response
	if err := json.Unmarshal([]byte(body), &batch); err != nil {
		t.Fatal(err)
	}
	if status != http.StatusOK || hdr.Get("Retry-After") != "" || len(batch) != 2 || batch[0].Error == nil || batch[0].Error.Code != 5002 {
		t.Errorf("batch: HTTP %d, Retry-After %q, %s", status, hdr.Get("Retry-After"), body)
	}
}
