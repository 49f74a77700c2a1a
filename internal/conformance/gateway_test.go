package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/internal/conformance"
	"github.com/gatehouse-dev/gatehouse/server"
)

// gatewayVersions are the protocol versions the gateway's /mcp answers; the suite runs for
// each of them that its scenarios cover.
var gatewayVersions = []string{"2025-11-25", "2026-07-28"}

// TestGatewayConformancePerVersion runs the suite against the gateway's /mcp (the demo MCP
// fixture bridged over streamable HTTP, sampling and elicitation relayed to the caller) once
// per protocol version the pinned suite covers, each against
// expected-failures-gateway-<version>.txt, and reports the pass count per version.
func TestGatewayConformancePerVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the conformance suite")
	}
	dir := os.Getenv("CONFORMANCE_TOOLS")
	if dir == "" {
		dir = filepath.Join("..", "..", conformance.DefaultToolsDir)
	}
	tools := conformance.Tools{Dir: dir}
	if err := tools.Check(context.Background()); errors.Is(err, conformance.ErrNotInstalled) && os.Getenv("CONFORMANCE_REQUIRED") == "" {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
	covered, err := tools.SpecVersions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fixture, err := conformance.ServeFixture("127.0.0.1:0", demo.MCPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := fixture.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	url := startGateway(t, fixture.URL)
	ran := 0
	for _, version := range gatewayVersions {
		if !slices.Contains(covered, version) {
			t.Logf("protocol %s: suite %s has no scenario for it (it covers %v)", version, conformance.SuiteVersion, covered)
			continue
		}
		ran++
		t.Run(version, func(t *testing.T) {
			conformance.VerifyURLAt(t, dir, url, "expected-failures-gateway-"+version+".txt", version)
		})
	}
	if ran == 0 {
		t.Errorf("suite %s covers none of %v", conformance.SuiteVersion, gatewayVersions)
	}
}

// startGateway runs a gateway whose MCP face bridges the MCP server at upstream, and returns
// the face's URL.
func startGateway(t *testing.T, upstream string) string {
	t.Helper()
	cfg, err := server.Parse("conformance.yaml", []byte(fmt.Sprintf(`server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth: {anonymous: {}}
mcp_face: {}
log: {level: error}
routing:
  mcp:
    servers:
      - name: demo
        http: {url: %q}
        sampling: client
        elicitation: client
`, upstream)))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(cfg, server.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("gateway stopped with %v", err)
		}
	})
	readyz := "http://" + srv.AdminAddr().String() + "/readyz"
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(readyz) //nolint:noctx // the gateway's own loopback admin address
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer 200 within 30s", readyz)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "http://" + srv.BoundaryAddr().String() + "/mcp"
}
