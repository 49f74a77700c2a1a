package mcpmatrix_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/mcpmatrix"
)

func TestReadPins(t *testing.T) {
	pins, err := mcpmatrix.ReadPins("package.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"@modelcontextprotocol/sdk", "@modelcontextprotocol/client", "@modelcontextprotocol/server", "node"} {
		if pins[name] == "" {
			t.Errorf("package.json does not pin %s: %v", name, pins)
		}
	}
	dir := t.TempDir()
	for name, content := range map[string]string{"bad json": "{", "no dependencies": `{"name":"x"}`} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := mcpmatrix.ReadPins(p); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestCheckRefusesAnotherInstallation: a missing package and one of another version are
// both ErrNotInstalled, found before node is run.
func TestCheckRefusesAnotherInstallation(t *testing.T) {
	dir := t.TempDir()
	pkg := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")
	if err := os.MkdirAll(pkg, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"version":"1.0.0"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tl := mcpmatrix.Tools{Dir: dir}
	for name, pins := range map[string]mcpmatrix.Pins{
		"other version": {"@modelcontextprotocol/sdk": "1.32.2"},
		"missing":       {"@modelcontextprotocol/client": "2.4.0"},
		"no node":       {"@modelcontextprotocol/sdk": "1.0.0", "node": "22.23.3"},
	} {
		if err := tl.Check(context.Background(), pins); !errors.Is(err, mcpmatrix.ErrNotInstalled) {
			t.Errorf("%s: %v, want ErrNotInstalled", name, err)
		}
	}
}
