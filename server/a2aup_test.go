package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/a2aclient"
	"github.com/gatehouse-dev/gatehouse/internal/otelstack"
)

// a2aUpConfig routes the upstream agent of upstream.mjs (%[2]s: its base URL) as the A2A
// agent "up", under JWT auth with a key ring that mints the hop tokens.
const a2aUpConfig = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth:
  jwt:
    issuers:
      - {issuer: "https://idp.test", audiences: [gatehouse], secret: %[1]q}
  keyring: {issuer: gatehouse, algorithm: EdDSA}
log: {level: debug}
routing:
  a2a:
    agents:
      - {name: up, card_url: %[2]q, card_refresh: 1m}
nekte: {}
a2a: {}
mcp_face: {}
`

// TestA2AUpstreamWithTheSDKServer reaches an @a2a-js/sdk agent (internal/a2aclient's
// upstream.mjs) through the gateway: its skills are capabilities, called as JSON-RPC
// methods and by nekte.invoke with a hop token minted for the agent (not the caller's),
// delegated with the agent's status updates as progress, failed as a typed error, and
// cancelled upstream with CancelTask. Missing tools skip it, unless
// CONFORMANCE_REQUIRED=1.
func TestA2AUpstreamWithTheSDKServer(t *testing.T) {
	tools := a2aclient.Default()
	if err := tools.Check(); err != nil {
		if errors.Is(err, a2aclient.ErrNotInstalled) && os.Getenv("CONFORMANCE_REQUIRED") != "1" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	up, err := tools.StartUpstream()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = up.Close() }()
	ts := start(t, fmt.Sprintf(a2aUpConfig, callerSecret, up.URL), nil)
	alice := callerToken(t, "alice", "agents")
	call := func(body string) (string, map[string]any) {
		t.Helper()
		status, _, out := ts.post(body, "Authorization", "Bearer "+alice)
		var m map[string]any
		if status != http.StatusOK {
			t.Fatalf("status %d: %s", status, out)
		}
		_ = json.Unmarshal([]byte(out), &m)
		return out, m
	}
	// The card is fetched in the background: wait for the skill.
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, m := call(`{"jsonrpc":"2.0","method":"a2a.up.echo","params":{"text":"hi"},"id":1}`)
		if m["error"] == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent's skills did not appear: %s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}

	t.Run("card fetches are counted", func(t *testing.T) {
		if n := ts.scrape()[`gatehouse_a2a_card_fetches_total{agent="up",result="ok"}`]; n < 1 {
			t.Fatalf("gatehouse_a2a_card_fetches_total ok = %v", n)
		}
	})

	t.Run("json-rpc with a minted hop token", func(t *testing.T) {
		_, m := call(`{"jsonrpc":"2.0","method":"a2a.up.echo","params":{"text":"hello"},"id":2}`)
		res, _ := m["result"].(map[string]any)
		if res["text"] != "echo: hello" || res["state"] != "completed" {
			t.Fatalf("result %v", m)
		}
		seen := res["artifacts"].([]any)[0].(map[string]any)["parts"].([]any)[1].(map[string]any)["data"].(map[string]any)
		bearer, _ := strings.CutPrefix(fmt.Sprint(seen["authorization"]), "Bearer ")
		if bearer == "" || bearer == alice {
			t.Fatalf("the agent saw Authorization %q: want a token minted for it, not the caller's", seen["authorization"])
		}
		claims := jwt.MapClaims{}
		if _, _, err := jwt.NewParser().ParseUnverified(bearer, claims); err != nil {
			t.Fatal(err)
		}
		if claims["iss"] != "gatehouse" || claims["sub"] != "alice" || fmt.Sprint(claims["aud"]) != "up" && fmt.Sprint(claims["aud"]) != "[up]" {
			t.Fatalf("hop token claims %v", claims)
		}
	})

	t.Run("the gateway's A2A face", func(t *testing.T) {
		// The public card lists what an anonymous caller may reach (nothing here); the
		// extended card lists alice's skills, the agent's among them, at the gateway's URL.
		status, _, card := ts.a2aPost(alice, "1.0", `{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard"}`)
		if status != http.StatusOK || !strings.Contains(card, `"id":"a2a.up.echo"`) || !strings.Contains(card, ts.base+"/a2a") {
			t.Fatalf("extended card %d %s", status, card)
		}
		status, _, out := ts.a2aPost(alice, "1.0", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":`+
			`{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"through the face"}],"metadata":{"skill":"a2a.up.echo"}}}}`)
		if status != http.StatusOK || !strings.Contains(out, "TASK_STATE_COMPLETED") || !strings.Contains(out, "echo: through the face") {
			t.Fatalf("SendMessage through the face: %d %s", status, out)
		}
	})

	t.Run("the MCP face", func(t *testing.T) {
		c := faceClientAs(t, ts.base+"/mcp", alice)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range list.Tools {
			names = append(names, tool.Name)
		}
		if !slices.Contains(names, "a2a.up.stream") || !slices.Contains(names, "a2a.up.echo") {
			t.Fatalf("tools %v", names)
		}
		var mu sync.Mutex
		var progress []string
		c.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method == "notifications/progress" {
				mu.Lock()
				progress = append(progress, fmt.Sprint(n.Params.AdditionalFields["message"]))
				mu.Unlock()
			}
		})
		req := mcp.CallToolRequest{}
		req.Params.Name = "a2a.up.stream"
		req.Params.Arguments = map[string]any{"text": "over mcp"}
		req.Params.Meta = &mcp.Meta{ProgressToken: "p-1"}
		res, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError || len(res.Content) == 0 || !strings.Contains(fmt.Sprint(res.Content[0]), "done streaming") {
			t.Fatalf("result %+v", res)
		}
		mu.Lock()
		defer mu.Unlock()
		if !slices.Contains(progress, "step 1") || !slices.Contains(progress, "step 3") {
			t.Fatalf("progress messages %q", progress)
		}
	})

	t.Run("nekte.invoke", func(t *testing.T) {
		out, m := call(`{"jsonrpc":"2.0","method":"nekte.invoke","params":{"cap":"a2a.up.echo","in":{"text":"via nekte"},"budget":{"max_tokens":500,"detail_level":"full"}},"id":3}`)
		if m["error"] != nil || !strings.Contains(out, "echo: via nekte") {
			t.Fatalf("%s", out)
		}
	})

	t.Run("failed is typed", func(t *testing.T) {
		_, m := call(`{"jsonrpc":"2.0","method":"a2a.up.fail","params":{"text":"x"},"id":4}`)
		e, _ := m["error"].(map[string]any)
		if e == nil || e["code"] != float64(1003) || !strings.Contains(fmt.Sprint(e["data"]), "it broke") {
			t.Fatalf("%v", m)
		}
	})

	t.Run("delegate streams progress", func(t *testing.T) {
		out, _ := call(`{"jsonrpc":"2.0","method":"nekte.delegate","params":{"task":{"id":"up-1","desc":"stream","timeout_ms":20000,"budget":{"max_tokens":500,"detail_level":"full"},"cap":"a2a.up.stream","in":{"text":"go"}}},"id":5}`)
		for _, want := range []string{"step 1", "step 2", "step 3", "artifact story", "done streaming", "event: complete"} {
			if !strings.Contains(out, want) {
				t.Fatalf("no %q in the delegate's events:\n%s", want, out)
			}
		}
	})

	t.Run("cancel sends CancelTask", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		done := make(chan string, 1)
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.base+"/rpc", strings.NewReader(
				`{"jsonrpc":"2.0","method":"nekte.delegate","params":{"task":{"id":"up-slow","desc":"slow","timeout_ms":20000,"budget":{"max_tokens":500,"detail_level":"full"},"cap":"a2a.up.slow","in":{"text":"wait"}}},"id":6}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+alice)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			done <- string(b)
		}()
		for !strings.Contains(fmt.Sprint(call(`{"jsonrpc":"2.0","method":"nekte.task.status","params":{"task_id":"up-slow"},"id":7}`)), "started") {
			if ctx.Err() != nil {
				t.Fatal("the slow task did not start")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if out, m := call(`{"jsonrpc":"2.0","method":"nekte.task.cancel","params":{"task_id":"up-slow"},"id":8}`); m["error"] != nil {
			t.Fatalf("cancel: %s", out)
		}
		<-done
		for {
			resp, err := http.Get(up.URL + "/seen")
			if err != nil {
				t.Fatal(err)
			}
			var seen struct {
				Cancelled []string `json:"cancelled"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&seen)
			_ = resp.Body.Close()
			if len(seen.Cancelled) == 1 {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("the agent saw no CancelTask: %v", seen)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// TestA2AUpstreamTraceInJaeger: one trace from the client through the gateway to the
// upstream agent. The client is the test, whose span is the traceparent it sends; Jaeger
// (internal/otelstack) holds the gateway's ingress span under it and the client span of
// the hop to the agent under that; the agent (upstream.mjs, which runs no OTel SDK)
// reports the traceparent it received: the same trace, with the hop's span as parent.
func TestA2AUpstreamTraceInJaeger(t *testing.T) {
	tools := a2aclient.Default()
	if err := tools.Check(); err != nil {
		if errors.Is(err, a2aclient.ErrNotInstalled) && os.Getenv("CONFORMANCE_REQUIRED") != "1" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	j := otelstack.StartJaeger(t)
	up, err := tools.StartUpstream()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = up.Close() }()
	ts := start(t, fmt.Sprintf(a2aUpConfig, callerSecret, up.URL)+fmt.Sprintf(
		"tracing: {endpoint: %q, protocol: grpc, insecure: true, export_interval: 50ms}\n", j.OTLPGRPC), nil)
	alice := callerToken(t, "alice", "agents")
	const traceID, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	var out string
	var h http.Header
	for deadline := time.Now().Add(20 * time.Second); ; {
		_, h, out = ts.post(`{"jsonrpc":"2.0","method":"a2a.up.echo","params":{"text":"traced"},"id":1}`,
			"Authorization", "Bearer "+alice, "traceparent", "00-"+traceID+"-"+clientSpan+"-01")
		if strings.Contains(out, "echo: traced") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	var resp struct {
		Result struct {
			Artifacts []struct {
				Parts []struct {
					Data struct {
						Traceparent string `json:"traceparent"`
					} `json:"data"`
				} `json:"parts"`
			} `json:"artifacts"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil || len(resp.Result.Artifacts) == 0 || len(resp.Result.Artifacts[0].Parts) < 2 {
		t.Fatalf("%v: %s", err, out)
	}
	if got := h.Get("X-Trace-Id"); got != traceID {
		t.Fatalf("X-Trace-Id %q, want the client's trace %s", got, traceID)
	}
	seen := strings.Split(resp.Result.Artifacts[0].Parts[1].Data.Traceparent, "-")
	if len(seen) != 4 || seen[1] != traceID {
		t.Fatalf("the agent received traceparent %q, want trace %s", resp.Result.Artifacts[0].Parts[1].Data.Traceparent, traceID)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	spans, err := j.WaitForTrace(ctx, traceID, 2)
	if err != nil {
		t.Fatalf("%v: %+v", err, spans)
	}
	var ingress, hop *otelstack.Span
	for i, s := range spans {
		switch {
		case s.Name == "http a2a.up.echo":
			ingress = &spans[i]
		case strings.HasPrefix(s.Name, "a2a SendMessage echo"):
			hop = &spans[i]
		}
	}
	if ingress == nil || hop == nil || ingress.ParentSpanID != clientSpan || hop.ParentSpanID != ingress.SpanID || seen[2] != hop.SpanID {
		t.Fatalf("spans in Jaeger %+v; the agent's parent span %s", spans, seen[2])
	}
}
