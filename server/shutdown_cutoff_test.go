package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// stuckTarget answers only when its call's context ends, and says when it began.
type stuckTarget struct{ began chan struct{} }

func (s stuckTarget) Name() string { return "stuck" }

func (s stuckTarget) Invoke(ctx context.Context, _ *gateway.Call) (*gateway.Result, error) {
	close(s.began)
	<-ctx.Done()
	return nil, gateway.AsError(ctx.Err())
}

// deafTarget ignores its call's context: it answers only when released.
type deafTarget struct{ began, release chan struct{} }

func (d deafTarget) Name() string { return "deaf" }

func (d deafTarget) Invoke(context.Context, *gateway.Call) (*gateway.Result, error) {
	close(d.began)
	<-d.release
	return gateway.NewResult([]byte(`"ok"`)), nil
}

// TestShutdownAnswersCutOffCalls: a call still running when the shutdown grace ends is
// answered with a typed error (SHUTTING_DOWN, reason grace_ended, a retry hint) before its
// connection closes, and the drain then finishes cleanly.
func TestShutdownAnswersCutOffCalls(t *testing.T) {
	for _, tt := range []struct{ grace, answerBy time.Duration }{
		{time.Second, 900 * time.Millisecond},
		{300 * time.Millisecond, 270 * time.Millisecond},
	} {
		t.Run(tt.grace.String(), func(t *testing.T) {
			stuck := stuckTarget{began: make(chan struct{})}
			cfg := strings.Replace(baseConfig, "shutdown_grace: 5s", "shutdown_grace: "+tt.grace.String(), 1)
			ts := start(t, cfg, map[string]gateway.Target{"stuck": stuck})
			type answer struct {
				code int
				body string
				err  error
				at   time.Time
			}
			got := make(chan answer, 1)
			go func() {
				resp, err := http.Post(ts.base+"/rpc", "application/json",
					strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"stuck","params":{}}`))
				if err != nil {
					got <- answer{err: err, at: time.Now()}
					return
				}
				defer func() { _ = resp.Body.Close() }()
				body, err := io.ReadAll(resp.Body)
				got <- answer{code: resp.StatusCode, body: string(body), err: err, at: time.Now()}
			}()
			<-stuck.began
			began := time.Now()
			stopErr := ts.stop()
			a := <-got
			if stopErr != nil {
				t.Fatalf("the drain did not finish cleanly: %v (the call: %+v)", stopErr, a)
			}
			if a.err != nil {
				t.Fatalf("the cut-off call got no answer: %v", a.err)
			}
			if a.code != http.StatusOK || !strings.Contains(a.body, `"code":-32023`) ||
				!strings.Contains(a.body, `"reason":"grace_ended"`) || !strings.Contains(a.body, `"retry_after_ms":1000`) {
				t.Fatalf("HTTP %d %s, want a JSON-RPC error -32023 SHUTTING_DOWN (grace_ended) and a retry hint", a.code, a.body)
			}
			if took := a.at.Sub(began); took < tt.answerBy/2 || took > tt.grace+time.Second {
				t.Errorf("answered %s after the shutdown began (grace %s): want it near the grace's end", took, tt.grace)
			}
		})
	}
}
