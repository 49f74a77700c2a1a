package consoletest

import (
	"encoding/json"
	"os"
	"testing"
)

// TestPins: package.json and package-lock.json pin the playwright-core the Go side expects.
func TestPins(t *testing.T) {
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := os.ReadFile("package.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	if got := pkg.Dependencies["playwright-core"]; got != PlaywrightVersion {
		t.Errorf("package.json pins playwright-core %q, want %s", got, PlaywrightVersion)
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if b, err = os.ReadFile("package-lock.json"); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		t.Fatal(err)
	}
	if got := lock.Packages["node_modules/playwright-core"].Version; got != PlaywrightVersion {
		t.Errorf("package-lock.json holds playwright-core %q, want %s", got, PlaywrightVersion)
	}
}
