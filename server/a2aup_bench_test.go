package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/a2aclient"
)

// BenchmarkA2AUpstream compares an A2A SendMessage (1.0, JSON-RPC binding) sent to the
// gateway's A2A face for the skill a2a.up.echo — a NEKTE task on the capability of an
// upstream agent, which the gateway calls with SendMessage and a minted hop token — with
// the same message, from the same client, sent straight to that agent
// (internal/a2aclient/upstream.mjs on the @a2a-js/sdk server). Without the SDK installed
// (make a2a-client-tools) it is skipped.
func BenchmarkA2AUpstream(b *testing.B) {
	tools := a2aclient.Default()
	if err := tools.Check(); err != nil {
		b.Skip(err)
	}
	up, err := tools.StartUpstream()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = up.Close() })
	// metadata.skill names the gateway's skill, skillId the agent's own.
	const body = `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}],"metadata":{"skill":"a2a.up.echo","skillId":"echo"}}}}`
	call, run := a2aSendRunner(b, body)
	b.Run("gateway", func(b *testing.B) {
		url := strings.TrimSuffix(benchGatewayConfig(b, fmt.Sprintf(`auth:
  jwt:
    issuers:
      - {issuer: "https://idp.test", audiences: [gatehouse], secret: %q}
  keyring: {issuer: gatehouse, algorithm: EdDSA}
routing:
  a2a:
    agents:
      - {name: up, card_url: %q}
nekte: {}
a2a: {max_tasks_per_principal: 1000000}
`, callerSecret, up.URL)), "/rpc") + "/a2a"
		hc := benchClient()
		for i := 0; ; i++ { // the card loads in the background
			if err := call(hc, url); err == nil {
				break
			} else if i == 400 {
				b.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		run(b, url)
	})
	b.Run("direct", func(b *testing.B) { run(b, up.URL+"/a2a") })
}
