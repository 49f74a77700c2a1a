package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// exampleClientsDir holds the example clients, relative to this package.
var exampleClientsDir = filepath.Join("..", "..", "examples", "clients")

// exampleClientsTools is where make clients-tools installs the TypeScript client's npm
// packages (make/clients.mk), relative to this package.
var exampleClientsTools = filepath.Join("..", "..", ".tmp", "clients-ts")

// exampleTranscript is what each example client prints against the gateway of
// testdata/examples/gatehouse.yaml with a token: every client the same lines.
const exampleTranscript = `call calc.subtract {"minuend":42,"subtrahend":23} = 19
batch of 3 requests (one a notification): 2 answers
  id 1: 6
  id 2: error -32601 Method not found
delegate test_tool_with_progress
  status accepted
  status running
  progress 0/100 Completed step 0 of 100
  progress 50/100 Completed step 50 of 100
  progress 100/100 Completed step 100 of 100
  status completed
  complete Tool with progress executed successfully
auth without a token: HTTP 401 (WWW-Authenticate: Bearer realm="gatehouse"), error 4001 Authentication failed (no credential)
auth with the token: HTTP 200, calc.subtract = 19
`

// errToolMissing reports a language's toolchain or pinned packages missing.
var errToolMissing = errors.New("not installed")

// exampleClient is one example client: prepare builds it (in dir, the test's temporary
// directory) and returns the command that runs it, or an error wrapping errToolMissing.
type exampleClient struct {
	name    string
	prepare func(t *testing.T, dir string) (*exec.Cmd, error)
}

var exampleClients = []exampleClient{
	{"python", func(_ *testing.T, _ string) (*exec.Cmd, error) {
		python, err := exec.LookPath("python3")
		if err != nil {
			return nil, fmt.Errorf("python3: %w: %w", errToolMissing, err)
		}
		return exec.Command(python, filepath.Join(exampleClientsDir, "python", "gatehouse_client.py")), nil
	}},
	{"typescript", prepareTypeScriptClient},
	{"go", func(t *testing.T, dir string) (*exec.Cmd, error) {
		bin := filepath.Join(dir, "client")
		build := exec.Command("go", "build", "-o", bin, filepath.Join(exampleClientsDir, "go"))
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building the Go client: %v\n%s", err, out)
		}
		return exec.Command(bin), nil
	}},
}

// prepareTypeScriptClient compiles client.ts with the pinned tsc into dir, beside a link to
// the installed node_modules, and returns the node command that runs it.
func prepareTypeScriptClient(t *testing.T, dir string) (*exec.Cmd, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node: %w: %w", errToolMissing, err)
	}
	src := filepath.Join(exampleClientsDir, "typescript")
	if err := checkNPMPins(filepath.Join(src, "package.json"), filepath.Join(exampleClientsTools, "node_modules")); err != nil {
		return nil, err
	}
	modules, err := filepath.Abs(filepath.Join(exampleClientsTools, "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"package.json", "tsconfig.json", "client.ts"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	tsc := exec.Command(node, filepath.Join(modules, "typescript", "bin", "tsc"), "-p", dir)
	if out, err := tsc.CombinedOutput(); err != nil {
		t.Fatalf("compiling client.ts: %v\n%s", err, out)
	}
	return exec.Command(node, filepath.Join(dir, "dist", "client.js")), nil
}

// checkNPMPins checks that every dependency package.json pins is installed in modules at
// its pinned version; the error wraps errToolMissing when not.
func checkNPMPins(packageJSON, modules string) error {
	b, err := os.ReadFile(packageJSON)
	if err != nil {
		return err
	}
	var pins struct {
		Dependencies    map[string]string `json:"dependencies"`
		DevDependencies map[string]string `json:"devDependencies"`
	}
	if err := json.Unmarshal(b, &pins); err != nil {
		return fmt.Errorf("%s: %w", packageJSON, err)
	}
	for _, deps := range []map[string]string{pins.Dependencies, pins.DevDependencies} {
		for name, version := range deps {
			var installed struct {
				Version string `json:"version"`
			}
			b, err := os.ReadFile(filepath.Join(modules, name, "package.json"))
			if err == nil {
				err = json.Unmarshal(b, &installed)
			}
			if err != nil {
				return fmt.Errorf("%s %s under %s: %w (run make clients-tools): %w", name, version, modules, errToolMissing, err)
			}
			if installed.Version != version {
				return fmt.Errorf("%s %s under %s: %w (run make clients-tools): found %s", name, version, modules, errToolMissing, installed.Version)
			}
		}
	}
	return nil
}

// TestExampleClients runs each client of examples/clients as a process against a gateway
// that requires a JWT (testdata/examples/gatehouse.yaml: the backends of make run's
// configuration) — a single call, a batch, a delegated task's progress stream, and the call
// refused with 401 without a token and answered with one — and compares what it prints
// with exampleTranscript; without a token the first call is refused and the client exits
// 1. A missing python3, node or npm install skips a client, unless CONFORMANCE_REQUIRED=1
// (make test) makes it a failure.
func TestExampleClients(t *testing.T) {
	p := startProcessEnv(t, filepath.Join("testdata", "examples", "gatehouse.yaml"), []string{mcpURLEnv + "=" + serveDemoMCP(t)})
	base := strings.TrimSuffix(p.rpc, "/rpc")
	token := mint(t, "example-client", "calc.read")
	for _, c := range exampleClients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cmd, err := c.prepare(t, t.TempDir())
			if errors.Is(err, errToolMissing) && os.Getenv("CONFORMANCE_REQUIRED") != "1" {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			run := func(token string) (string, string, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				c := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
				c.Env = append(os.Environ(), "GATEHOUSE_URL="+base, "GATEHOUSE_TOKEN="+token)
				var stdout, stderr bytes.Buffer
				c.Stdout, c.Stderr = &stdout, &stderr
				err := c.Run()
				return stdout.String(), stderr.String(), err
			}

			stdout, stderr, err := run(token)
			if err != nil || stdout != exampleTranscript {
				t.Fatalf("with a token: %v\n--- stdout\n%s--- want\n%s--- stderr\n%s", err, stdout, exampleTranscript, stderr)
			}

			stdout, stderr, err = run("")
			ee, ok := errors.AsType[*exec.ExitError](err)
			const refused = "gatehouse client: call calc.subtract: error 4001 Authentication failed\n"
			if !ok || ee.ExitCode() != 1 || stdout != "" || stderr != refused {
				t.Fatalf("without a token: %v, want exit 1\n--- stdout\n%s--- stderr\n%s--- want stderr\n%s", err, stdout, stderr, refused)
			}
		})
	}
}
