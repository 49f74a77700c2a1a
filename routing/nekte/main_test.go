package nekte_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// fixtureBin is routing/mcpbackend's MCP fixture server, built once by TestMain.
var fixtureBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nekte-fixture")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fixtureBin = filepath.Join(dir, "fixture")
	out, err := exec.Command("go", "build", "-o", fixtureBin, "../mcpbackend/testdata/fixture").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the MCP fixture server: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}
