package testproc

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// NPMInstalled reports whether the npm prefix dir holds package pkg (e.g. "@a2a-js/sdk")
// at version; the error says what it found instead.
func NPMInstalled(dir, pkg, version string) error {
	raw, err := os.ReadFile(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), "package.json"))
	if err != nil {
		return fmt.Errorf("%s: %w", pkg, err)
	}
	var p struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return fmt.Errorf("%s: %w", pkg, err)
	}
	if p.Version != version {
		return fmt.Errorf("%s is %q, want %s", pkg, p.Version, version)
	}
	return nil
}

// CheckNPMPins fails t unless package.json and package-lock.json in dir both pin pkg at
// version: what the Go side of an npm-driven test expects is what `npm ci` installs.
func CheckNPMPins(t testing.TB, dir, pkg, version string) {
	t.Helper()
	var manifest struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	for file, v := range map[string]any{"package.json": &manifest, "package-lock.json": &lock} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	if got := manifest.Dependencies[pkg]; got != version {
		t.Errorf("package.json pins %s %q, want %s", pkg, got, version)
	}
	if got := lock.Packages["node_modules/"+pkg].Version; got != version {
		t.Errorf("package-lock.json holds %s %q, want %s", pkg, got, version)
	}
}
