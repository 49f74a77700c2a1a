package a2aclient

import (
	"encoding/json"
	"os"
	"testing"
)

// TestPins: package.json and package-lock.json pin the SDK the Go side expects.
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
	if got := pkg.Dependencies["@a2a-js/sdk"]; got != SDKVersion {
		t.Errorf("package.json pins @a2a-js/sdk %q, want %s", got, SDKVersion)
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
	if got := lock.Packages["node_modules/@a2a-js/sdk"].Version; got != SDKVersion {
		t.Errorf("package-lock.json holds @a2a-js/sdk %q, want %s", got, SDKVersion)
	}
}
