package server

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/a2aclient"
	"github.com/gatehouse-dev/gatehouse/internal/benchutil"
)

// BenchmarkA2ASendMessage compares an A2A SendMessage (1.0, JSON-RPC binding) answered by
// the gateway's A2A face — the message runs as a NEKTE task on the in-process subtract
// capability — with the same message, from the same client, answered by the @a2a-js/sdk
// reference server (internal/a2aclient/server.mjs: express, an in-memory task store, an
// executor that completes the task at once). Without the SDK installed (make
// a2a-client-tools) it is skipped.
// a2aBenchCallers is how many principals the benchmark's calls take turns as.
const a2aBenchCallers = 4096

// a2aSendRunner returns one SendMessage of body (answered with a completed task) at a URL,
// and what runs it there with 1 and 32 callers. The callers are many principals, as at a front door:
// each call bears the next of a2aBenchCallers tokens (a direct upstream ignores them), so
// no caller's task index grows with b.N.
func a2aSendRunner(b *testing.B, body string) (call func(hc *http.Client, url string) error, run func(b *testing.B, url string)) {
	const want = `"TASK_STATE_COMPLETED"`
	tokens := make([]string, a2aBenchCallers)
	for i := range tokens {
		tokens[i] = "Bearer " + callerToken(b, "caller-"+strconv.Itoa(i))
	}
	var next atomic.Int64
	call = func(hc *http.Client, url string) error {
		return post(hc, url, body, want, "A2A-Version", "1.0", "Authorization", tokens[next.Add(1)%a2aBenchCallers])
	}
	return call, func(b *testing.B, url string) {
		hc := benchClient()
		if err := call(hc, url); err != nil {
			b.Fatal(err)
		}
		for _, c := range []int{1, 32} {
			b.Run("c"+strconv.Itoa(c), func(b *testing.B) {
				benchutil.Callers(b, c, func(context.Context) error { return call(hc, url) })
			})
		}
	}
}

func BenchmarkA2ASendMessage(b *testing.B) {
	tools := a2aclient.Default()
	if err := tools.Check(); err != nil {
		b.Skip(err)
	}
	const body = `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"data":{"minuend":42,"subtrahend":23}}],"metadata":{"skill":"subtract"}}}}`
	_, run := a2aSendRunner(b, body)
	b.Run("gateway", func(b *testing.B) {
		url := benchGatewayConfig(b, fmt.Sprintf(`auth:
  jwt:
    issuers:
      - {issuer: "https://idp.test", audiences: [gatehouse], secret: %q}
routing: {demo: {}}
nekte: {}
a2a: {max_tasks_per_principal: 1000000}
`, callerSecret))
		run(b, strings.TrimSuffix(url, "/rpc")+"/a2a")
	})
	b.Run("direct", func(b *testing.B) {
		srv, err := tools.StartServer()
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = srv.Close() })
		run(b, srv.URL)
	})
}
