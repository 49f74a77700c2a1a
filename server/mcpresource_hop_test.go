package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/faces/httprpc"
	"github.com/gatehouse-dev/gatehouse/internal/hoptest"
)

// readHopConfig: JWT callers of https://idp.test, a generated key ring, hopserver over
// HTTP with minted hop tokens (audience hop-http), and a rule giving its resources the
// scope tools:read.
const readHopConfig = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth:
  jwt:
    issuers:
      - {issuer: "https://idp.test", audiences: [gatehouse], secret: %q}
  keyring: {issuer: gatehouse, algorithm: EdDSA}
log: {level: debug}
mcp_face: {}
routing:
  mcp:
    servers:
      - name: hophttp
        http: {url: %q}
        downstream_token: {audience: hop-http}
policy:
  rules:
    - {id: hop-resources, match: {mcp_resource: "hophttp/hop://*"}, scopes: ["tools:read"]}
`

// faceClientAs is an initialized streamable HTTP client of the face sending bearer.
func faceClientAs(t *testing.T, url, bearer string) *client.Client {
	t.Helper()
	return streamableClient(t, url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + bearer}))
}

// TestMCPFaceReadCarriesHopToken: a resources/read on the face reaches an HTTP upstream
// with a token minted for that hop — sub = the caller, aud = the upstream, scopes = the
// caller's ∩ the resource rule's — which the upstream verifies against the gateway's
// published JWKS; a caller without the rule's scope never reaches it.
func TestMCPFaceReadCarriesHopToken(t *testing.T) {
	bin := buildHopServer(t)
	urlFile := filepath.Join(t.TempDir(), "jwks-url")
	upstream := startHopHTTP(t, bin, "HOP_JWKS_URL_FILE="+urlFile, "HOP_AUDIENCE=hop-http")
	ts := start(t, fmt.Sprintf(readHopConfig, callerSecret, upstream), nil)
	if err := os.WriteFile(urlFile, []byte(ts.base+httprpc.JWKSPath), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(ts.mcp.MCPServer().ListResources()) > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	read := mcp.ReadResourceRequest{}
	read.Params.URI = "hop://hop-http/whoami"

	alice := faceClientAs(t, ts.base+"/mcp", callerToken(t, "alice", "tools:read", "unrelated"))
	res, err := alice.ReadResource(ctx, read)
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("alice's read: %+v, %v", res, err)
	}
	text, ok := res.Contents[0].(mcp.TextResourceContents)
	var c hoptest.Claims
	if !ok || json.Unmarshal([]byte(text.Text), &c) != nil {
		t.Fatalf("the upstream's answer: %+v", res.Contents[0])
	}
	if c.Subject != "alice" || !slices.Equal(c.Audience, []string{"hop-http"}) || !slices.Equal(c.Scopes, []string{"tools:read"}) ||
		c.Actor["sub"] != "gatehouse" {
		t.Fatalf("hop claims %+v", c)
	}

	bob := faceClientAs(t, ts.base+"/mcp", callerToken(t, "bob", "unrelated"))
	if _, err := bob.ReadResource(ctx, read); err == nil || !strings.Contains(err.Error(), "Insufficient scope") {
		t.Fatalf("bob's read without tools:read: %v", err)
	}
}

// TestMCPFaceReadTraced: a resources/read on the face is a span of the gateway's
// ("mcp mcp.resources/read") with the upstream request its child client span, whose
// mcp.method.name is resources/read.
func TestMCPFaceReadTraced(t *testing.T) {
	yaml := faceConfig("127.0.0.1:0", demoUpstream(t, demo.MCPOptions{}), "session_key: "+testSessionKey) +
		"tracing: {export_interval: 10ms}\n"
	ts, exp := startTraced(t, yaml)
	waitForCatalog(t, ts)
	c := streamableClient(t, ts.base+"/mcp")
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	read := mcp.ReadResourceRequest{}
	read.Params.URI = "test://static-text"
	if _, err := c.ReadResource(ctx, read); err != nil {
		t.Fatal(err)
	}
	const face, upstream = "mcp mcp.resources/read", "mcp resources/read"
	spans := ts.spansWhen(exp, func(s tracetest.SpanStubs) bool {
		return len(named(s, face)) == 1 && len(named(s, upstream)) == 1
	})
	client := named(spans, upstream)[0]
	if got := attr(client, "mcp.method.name"); got != "resources/read" {
		t.Fatalf("mcp.method.name = %q", got)
	}
	if got := attr(client, "gatehouse.backend"); got != "mcp/demo" {
		t.Fatalf("gatehouse.backend = %q", got)
	}
	if client.SpanContext.TraceID() != named(spans, face)[0].SpanContext.TraceID() {
		t.Fatalf("the upstream span is not in the read's trace:\n%s", describeSpans(spans))
	}
}
