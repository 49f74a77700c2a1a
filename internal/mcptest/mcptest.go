// Package mcptest holds what the tests of several packages need to run real MCP servers:
// the mcp-go fixture server of routing/mcpbackend, built once per test binary, and the npm
// servers `make mcp-servers` installs.
package mcptest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Main is a TestMain body: it builds the Go program in dir (relative to the test's package,
// e.g. "../mcpbackend/testdata/fixture") into a temporary directory, stores the binary's
// path in *bin, runs the tests, fails them when goroutines leaked, and exits.
func Main(m *testing.M, dir string, bin *string) {
	tmp, err := os.MkdirTemp("", "mcptest")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*bin = filepath.Join(tmp, filepath.Base(dir))
	build := exec.Command("go", "build", "-o", *bin, "./"+filepath.ToSlash(filepath.Clean(dir))) //nolint:gosec // a package path the test itself names
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building %s: %v\n%s", dir, err, out)
		_ = os.RemoveAll(tmp)
		os.Exit(1)
	}
	code := m.Run()
	if code == 0 {
		if err := FindLeaks(leakPatience); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	_ = os.RemoveAll(tmp)
	os.Exit(code)
}

// leakPatience is how long FindLeaks waits, in Main, for goroutines to finish.
const leakPatience = 5 * time.Second

// VerifyMain is a TestMain body for packages that run MCP servers in-process: it runs the
// tests and fails them when goroutines leaked, giving goroutines mcp-go stops
// asynchronously (a streamable HTTP session's listening pump ends a moment after the
// session does) up to 5 s to finish — goleak.VerifyTestMain's own retries last under a
// second, which a loaded machine outlasts.
func VerifyMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := FindLeaks(leakPatience); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// FindLeaks is goleak.Find, repeated until it finds none or within has passed; it returns
// the last finding.
func FindLeaks(within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		err := goleak.Find()
		if err == nil || time.Now().After(deadline) {
			return err
		}
	}
}

// NPMServer returns the path of an npm MCP server's binary installed by `make mcp-servers`
// (under .tmp/npm/node_modules/.bin of the repository, or MCP_SERVERS_BIN). A missing server
// fails the test under CI (CI set) and skips it elsewhere.
func NPMServer(t testing.TB, bin string) string {
	t.Helper()
	dir := os.Getenv("MCP_SERVERS_BIN")
	if dir == "" {
		dir = filepath.Join(RepoRoot(t), ".tmp", "npm", "node_modules", ".bin")
	}
	p, err := filepath.Abs(filepath.Join(dir, bin))
	if err == nil {
		_, err = os.Stat(p) //nolint:gosec // a path under the repository or MCP_SERVERS_BIN, read by tests only
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("MCP server %s is not installed in %s (make test runs `make mcp-servers` first): %v", bin, dir, err)
		}
		t.Skipf("MCP server %s is not installed in %s: run `make mcp-servers` (or set MCP_SERVERS_BIN)", bin, dir)
	}
	return p
}

// RepoRoot returns the directory of the module's go.mod, found upwards from the working
// directory (a test's package directory).
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the working directory")
		}
		dir = parent
	}
}
