package server

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/configs/loader"
	"github.com/gatehouse-dev/gatehouse/faces/httprpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/state"
)

// nekteOn is baseConfig with NEKTE on (every default).
const nekteOn = baseConfig + "nekte: {}\n"

// holdTargets routes the hold capability (holdTarget) beside the configured targets.
func holdTargets() map[string]gateway.Target {
	return map[string]gateway.Target{"test.hold": holdTarget{}}
}

// rpc posts one request and decodes its response.
func (ts *testServer) rpc(t *testing.T, body string) response {
	t.Helper()
	status, _, out := ts.post(body)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, out)
	}
	return decodeOne(t, out)
}

// result decodes a successful response's result into a map, failing on an error.
func result(t *testing.T, r response) map[string]any {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("error %+v", r.Error)
	}
	var m map[string]any
	if err := json.Unmarshal(r.Result, &m); err != nil {
		t.Fatalf("result %s: %v", r.Result, err)
	}
	return m
}

// httpFace is the JSON-over-HTTP face of the golden harness, for the tests that read
// event streams in the background.
var httpFace = goldenFaces[0]

func TestNekteConfigErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"endpoint not a URL", "nekte: {endpoint: /rpc}\n", "nekte.endpoint"},
		{"endpoint without host", "nekte: {endpoint: \"https://\"}\n", "nekte.endpoint"},
		{"default above max", "nekte: {tasks: {default_timeout: 2h, max_timeout: 1h}}\n", "tasks.default_timeout"},
		{"record too large", "nekte: {tasks: {max_event_bytes: 600000}}\n", "value limit"},
		{"negative", "nekte: {tasks: {max_per_owner: -1}}\n", "max_per_owner"},
		{"unknown key", "nekte: {task: {}}\n", "task"},
		{"bad category key", "nekte: {catalog: {categories: {rpc: x}}}\n", `key "rpc" is not allowed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(baseConfig+tt.yaml))
			var list loader.ErrorList
			if !errors.As(err, &list) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v; want a config error about %s", err, tt.want)
			}
		})
	}
	if _, err := Parse("t.yaml", []byte(baseConfig+"nekte: {endpoint: \"https://agents.example.com/rpc\", catalog: {hash_length: 16}}\n")); err != nil {
		t.Fatal(err)
	}
}

// TestNekteOff: without the nekte section the methods are not routed, the card is a 404
// and the JWKS has no keys.
func TestNekteOff(t *testing.T) {
	ts := start(t, baseConfig, nil)
	if r := ts.rpc(t, `{"jsonrpc":"2.0","method":"nekte.discover","params":{"level":0},"id":1}`); r.Error == nil || r.Error.Code != -32601 {
		t.Fatalf("nekte.discover without NEKTE: %+v", r)
	}
	if status, _, _ := getCard(t, ts, nk.CardPath, ""); status != http.StatusNotFound {
		t.Fatalf("card: %d", status)
	}
	if status, _, body := getCard(t, ts, httprpc.JWKSPath, ""); status != http.StatusOK || body != `{"keys":[]}` {
		t.Fatalf("jwks: %d %s", status, body)
	}
	resp, err := http.Post(ts.base+httprpc.JWKSPath, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Fatalf("POST %s: %d, Allow %q", httprpc.JWKSPath, resp.StatusCode, resp.Header.Get("Allow"))
	}
}

// shadow offers a capability whose id the demo target also has.
type shadow struct{}

func (shadow) Name() string { return "shadow" }

func (shadow) Invoke(context.Context, *gateway.Call) (*gateway.Result, error) {
	return gateway.NewResult([]byte(`0`)), nil
}

func (shadow) Capabilities() []capability.Capability {
	return []capability.Capability{{ID: "subtract", Description: "Another subtract.", Input: json.RawMessage(`{}`),
		Method: "test.shadow", Kind: capability.KindBuiltin, Source: "shadow"}}
}

// TestNekteCatalogProblemsAreLogged: what the catalog renames or leaves out is logged.
func TestNekteCatalogProblemsAreLogged(t *testing.T) {
	ts := start(t, nekteOn, map[string]gateway.Target{"test.shadow": shadow{}})
	if !strings.Contains(ts.logs.String(), `msg="nekte catalog" capability=subtract`) {
		t.Fatalf("no problem logged:\n%s", ts.logs.String())
	}
	for _, id := range []string{"demo.subtract", "shadow.subtract"} {
		if capHash(t, ts, id) == "" {
			t.Fatalf("%s is not in the catalog", id)
		}
	}
}

// TestNekteCard: the card names the endpoint the caller addressed, or nekte.endpoint, and
// the authentication the auth section asks for; it lists the catalog's capabilities.
func TestNekteCard(t *testing.T) {
	card := func(t *testing.T, ts *testServer, path, host string) nk.AgentCard {
		t.Helper()
		status, hdr, body := getCard(t, ts, path, host)
		var c nk.AgentCard
		if status != http.StatusOK || hdr.Get("Content-Type") != "application/json" || json.Unmarshal([]byte(body), &c) != nil {
			t.Fatalf("%s: %d %s %s", path, status, hdr.Get("Content-Type"), body)
		}
		return c
	}
	t.Run("anonymous only", func(t *testing.T) {
		ts := start(t, nekteOn, nil)
		for _, p := range []string{nk.CardPath, httprpc.RPCPath + nk.CardPath} {
			c := card(t, ts, p, "")
			if c.Endpoint != ts.base+httprpc.RPCPath || c.Auth != nk.AuthNone || c.Agent != "gatehouse" || c.Nekte != nk.ProtocolVersion ||
				!c.BudgetSupport || !slices.Contains(c.Caps, "subtract") {
				t.Fatalf("%s: %+v", p, c)
			}
		}
		if c := card(t, ts, nk.CardPath, "agents.example.com:8443"); c.Endpoint != "http://agents.example.com:8443/rpc" {
			t.Fatalf("endpoint with Host agents.example.com:8443: %s", c.Endpoint)
		}
	})
	t.Run("configured endpoint and agent", func(t *testing.T) {
		ts := start(t, baseConfig+"nekte: {endpoint: \"https://agents.example.com/gw/rpc\", catalog: {agent: edge}}\n", nil)
		if c := card(t, ts, httprpc.RPCPath+nk.CardPath, ""); c.Endpoint != "https://agents.example.com/gw/rpc" || c.Agent != "edge" {
			t.Fatalf("%+v", c)
		}
	})
	t.Run("credentials required", func(t *testing.T) {
		ts := start(t, noAnonymous+"nekte: {}\n", nil)
		if c := card(t, ts, nk.CardPath, ""); c.Auth != nk.AuthBearer {
			t.Fatalf("auth %q, want bearer", c.Auth)
		}
	})
}

// TestNekteJWKSVerifiesReceipts: the key published at /.well-known/jwks.json verifies the
// receipt of a completed task.
func TestNekteJWKSVerifiesReceipts(t *testing.T) {
	ts := start(t, nekteOn, nil)
	status, hdr, body := getCard(t, ts, httprpc.JWKSPath, "")
	var set struct {
		Keys []struct {
			Kty, Crv, X, Kid, Alg, Use string
		} `json:"keys"`
	}
	if status != http.StatusOK || hdr.Get("Content-Type") != "application/json" || json.Unmarshal([]byte(body), &set) != nil || len(set.Keys) != 1 {
		t.Fatalf("jwks: %d %s", status, body)
	}
	k := set.Keys[0]
	if k.Kty != "OKP" || k.Crv != "Ed25519" || k.Alg != "EdDSA" || k.Use != "sig" || k.Kid == "" {
		t.Fatalf("key %+v", k)
	}
	pub, err := base64.RawURLEncoding.DecodeString(k.X)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		t.Fatalf("x %q: %v", k.X, err)
	}

	g := &nekteGolden{ts: ts}
	g.send(t, httpFace, `{"jsonrpc":"2.0","method":"nekte.delegate","params":{"task":{"id":"r-1","desc":"subtract","timeout_ms":5000,"budget":{"max_tokens":50,"detail_level":"full"},"cap":"subtract","in":{"minuend":5,"subtrahend":3}}},"id":1}`).wait(t)
	src := result(t, ts.rpc(t, `{"jsonrpc":"2.0","method":"nekte.verify","params":{"task_id":"r-1","checks":["source"]},"id":2}`))["source"].(map[string]any)
	var claims jwt.MapClaims
	tok, err := jwt.ParseWithClaims(src["receipt"].(string), &claims, func(tok *jwt.Token) (any, error) {
		if tok.Header["kid"] != k.Kid {
			return nil, errors.New("unknown kid")
		}
		return ed25519.PublicKey(pub), nil
	}, jwt.WithValidMethods([]string{"EdDSA"}))
	if err != nil || !tok.Valid || claims["task_id"] != "r-1" || claims["cap"] != "subtract" || claims["output_sha256"] != src["output_sha256"] {
		t.Fatalf("receipt %v: %v %v", src["receipt"], err, claims)
	}
}

// TestNekteInvokeFromTheExternalZone: under the default routing.mcp.direct_zones an
// external caller may not call a bridged MCP tool as a method, but may run it as a
// capability — nekte.invoke over HTTP and WebSocket, and nekte.delegate.
func TestNekteInvokeFromTheExternalZone(t *testing.T) {
	ts := start(t, withDemoMCP(t, nekteOn, ""), nil)
	checkZoneRefusal(t, "http", ts.rpc(t, simpleText), "external")
	const invoke = `{"jsonrpc":"2.0","method":"nekte.invoke","params":{"cap":"test_simple_text","in":{},"budget":{"max_tokens":100,"detail_level":"minimal"}},"id":2}`
	want := `{"out":"This is a simple text response for testing.","resolved_level":"minimal","meta":{"tokens_used":9}}`
	if got := nekteNormalize(string(ts.rpc(t, invoke).Result)); got != want+"\n" {
		t.Fatalf("http: %s\nwant %s", got, want)
	}
	c := dialWS(t, ts, nil)
	wsSend(t, c, invoke)
	if got := nekteNormalize(string(decodeOne(t, wsRead(t, c, 10*time.Second)).Result)); got != want+"\n" {
		t.Fatalf("websocket: %s\nwant %s", got, want)
	}
	g := &nekteGolden{ts: ts}
	stream := g.send(t, httpFace, `{"jsonrpc":"2.0","method":"nekte.delegate","params":{"task":{"id":"x-1","desc":"text","timeout_ms":5000,"budget":{"max_tokens":100,"detail_level":"minimal"},"cap":"test_simple_text"}},"id":3}`).wait(t)
	if !strings.Contains(stream.body, `event: complete`+"\n"+`data: {"task_id":"x-1","status":"completed","out":{"minimal":"This is a simple text response for testing."}`) {
		t.Fatalf("delegate: %s", stream.body)
	}
}

// TestNekteTasksSurviveReload: a task running when the configuration is reloaded goes on
// — its stream, its status, suspend and resume — while the catalog follows the new
// configuration; turning NEKTE off and on again by reload keeps the task too.
func TestNekteTasksSurviveReload(t *testing.T) {
	ts := startConfig(t, mustParse(t, nekteOn), holdTargets())
	g := &nekteGolden{ts: ts}
	stream := g.send(t, httpFace, `{"jsonrpc":"2.0","method":"nekte.delegate","params":{"task":{"id":"r-1","desc":"hold","timeout_ms":60000,"budget":{"max_tokens":500,"detail_level":"full"},"cap":"hold"}},"id":1}`)
	stream.waitFor(t, `"processed":1`)

	if err := ts.Reload(mustParse(t, baseConfig+"nekte: {catalog: {agent: renamed}, tasks: {max_per_owner: 5}}\n")); err != nil {
		t.Fatal(err)
	}
	if m := result(t, ts.rpc(t, `{"jsonrpc":"2.0","method":"nekte.discover","params":{"level":0,"filter":{"id":"hold"}},"id":2}`)); m["agent"] != "renamed" {
		t.Fatalf("discover after reload: %v", m)
	}
	waitFor(t, func() bool { return strings.Contains(ts.logs.String(), "take effect on restart (the catalog") })
	if m := result(t, ts.rpc(t, `{"jsonrpc":"2.0","method":"nekte.task.status","params":{"task_id":"r-1"},"id":3}`)); m["status"] != "running" {
		t.Fatalf("status after reload: %v", m)
	}

	if err := ts.Reload(mustParse(t, baseConfig)); err != nil { // NEKTE off
		t.Fatal(err)
	}
	if r := ts.rpc(t, `{"jsonrpc":"2.0","method":"nekte.task.status","params":{"task_id":"r-1"},"id":4}`); r.Error == nil || r.Error.Code != -32601 {
		t.Fatalf("with NEKTE off: %+v", r)
	}
	if err := ts.Reload(mustParse(t, nekteOn)); err != nil {
		t.Fatal(err)
	}
	if m := result(t, ts.rpc(t, `{"jsonrpc":"2.0","method":"nekte.task.suspend","params":{"task_id":"r-1"},"id":5}`)); m["status"] != "suspended" {
		t.Fatalf("suspend: %v", m)
	}
	if m := result(t, ts.rpc(t, `{"jsonrpc":"2.0","method":"nekte.task.resume","params":{"task_id":"r-1"},"id":6}`)); m["status"] != "running" {
		t.Fatalf("resume: %v", m)
	}
	got := nekteNormalize(stream.wait(t).body)
	want := `event: status_change
data: {"task_id":"r-1","from":"pending","to":"accepted"}

event: status_change
data: {"task_id":"r-1","from":"accepted","to":"running"}

event: progress
data: {"processed":1,"total":2}

event: status_change
data: {"task_id":"r-1","from":"running","to":"suspended","reason":"suspended by the caller"}

event: suspended
data: {"task_id":"r-1","checkpoint_available":true}

event: status_change
data: {"task_id":"r-1","from":"suspended","to":"running","reason":"resumed"}

event: resumed
data: {"task_id":"r-1","from_checkpoint":true}

event: progress
data: {"processed":2,"total":2}

event: status_change
data: {"task_id":"r-1","from":"running","to":"completed"}

event: complete
data: {"task_id":"r-1","status":"completed","out":{"minimal":"resumed_from: 1","compact":{"resumed_from":1},"full":{"resumed_from":1}},"meta":{"tokens_used":26}}


`
	if got != want {
		t.Fatalf("the stream across reloads:\n%s\nwant\n%s", got, want)
	}
}

func mustParse(t *testing.T, yaml string) *Config {
	t.Helper()
	cfg, err := Parse("t.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestNekteDrainSuspendsTasks: when the server drains, a running task is suspended with a
// checkpoint while its caller's stream is still open (the stream says so, then ends), the
// drain finishes cleanly, and the task resumes on another server sharing the state store
// (a replica, or the same process restarted).
func TestNekteDrainSuspendsTasks(t *testing.T) {
	kv := state.NewEmbedded(state.EmbeddedOptions{})
	t.Cleanup(func() { _ = kv.Close() })
	cfg := mustParse(t, nekteOn)
	first := startOptions(t, cfg, Options{Targets: holdTargets(), State: kv}, nil)
	stream := (&nekteGolden{ts: first}).send(t, httpFace,
		`{"jsonrpc":"2.0","method":"nekte.delegate","params":{"task":{"id":"d-1","desc":"hold","timeout_ms":60000,"budget":{"max_tokens":500,"detail_level":"full"},"cap":"hold"}},"id":1}`)
	stream.waitFor(t, `"processed":1`)
	if err := first.stop(); err != nil {
		t.Fatalf("drain: %v", err)
	}
	got := nekteNormalize(stream.wait(t).body)
	if !strings.HasSuffix(got, `event: status_change
data: {"task_id":"d-1","from":"running","to":"suspended","reason":"gateway draining"}

event: suspended
data: {"task_id":"d-1","checkpoint_available":true}


`) {
		t.Fatalf("the stream of a task when the server drains:\n%s", got)
	}

	second := startOptions(t, mustParse(t, nekteOn), Options{Targets: holdTargets(), State: kv}, nil)
	if m := result(t, second.rpc(t, `{"jsonrpc":"2.0","method":"nekte.task.status","params":{"task_id":"d-1"},"id":2}`)); m["status"] != "suspended" || m["checkpoint_available"] != true {
		t.Fatalf("status on the next server: %v", m)
	}
	if m := result(t, second.rpc(t, `{"jsonrpc":"2.0","method":"nekte.task.resume","params":{"task_id":"d-1"},"id":3}`)); m["status"] != "running" {
		t.Fatalf("resume: %v", m)
	}
	again := (&nekteGolden{ts: second}).send(t, httpFace, `{"jsonrpc":"2.0","method":"nekte.task.stream","params":{"task_id":"d-1"},"id":4}`).wait(t)
	if !strings.Contains(again.body, `"out":{"minimal":"resumed_from: 1"`) {
		t.Fatalf("the resumed task's stream: %s", again.body)
	}
}
