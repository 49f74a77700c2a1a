package archtest

import (
	"encoding/json"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/gatehouse-dev/gatehouse"

// layer returns the layer of a package path inside the module: the first path element,
// except that each face (faces/NAME) and the configuration loader (configs/loader) are
// layers of their own.
func layer(pkg string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
	parts := strings.SplitN(rel, "/", 3)
	switch {
	case parts[0] == "faces" && len(parts) > 1:
		return "faces/" + parts[1]
	case parts[0] == "configs" && len(parts) > 1 && parts[1] == "loader":
		return "configs/loader"
	}
	return parts[0]
}

// below lists the layers every layer above the middle row may import.
var below = []string{"schemas", "codecs", "gateway", "state"}

// middle is the middle row: siblings that do not import each other.
var middle = []string{"auth", "resilience", "routing", "observability"}

// allowed lists, per layer, the module layers it may import. A layer absent from the map
// may import nothing of the module; a face (faces/NAME) is checked by isFace.
var allowed = map[string][]string{
	"schemas":        {},
	"configs":        {},
	"configs/loader": {"schemas"},
	"codecs":         {"schemas"},
	"gateway":        {"schemas", "codecs"},
	"state":          {"schemas", "codecs", "gateway"},
	"auth":           below,
	"routing":        below,
	"resilience":     below,
	"observability":  below,
	"faces":          slices.Concat(below, middle),
	"demo":           slices.Concat(below, []string{"routing"}),
	"server":         slices.Concat(below, middle, []string{"faces", "faces/*", "configs/loader", "configs", "demo"}),
	"deploy":         {"schemas", "configs/loader", "server"},
	"cmd":            slices.Concat(below, middle, []string{"faces", "faces/*", "configs/loader", "configs", "demo", "server"}),
	"internal":       slices.Concat(below, middle, []string{"faces", "faces/*", "configs/loader", "configs", "demo", "server"}),
	// The example clients speak to the gateway over the wire only, as any client would.
	"examples": {},
}

// rule returns the layers from may import: a face may import what the faces layer may,
// and the faces layer itself, but never another face.
func rule(from string) ([]string, bool) {
	if strings.HasPrefix(from, "faces/") {
		return append(slices.Clone(allowed["faces"]), "faces"), true
	}
	ok, known := allowed[from]
	return ok, known
}

// permits reports whether a layer whose rule is ok may import layer to.
func permits(ok []string, to string) bool {
	if strings.HasPrefix(to, "faces/") {
		return slices.Contains(ok, "faces/*")
	}
	return slices.Contains(ok, to)
}

// coreThirdParty lists the only non-standard imports the core types may have: the core
// must not expose gin, gRPC, OTel, mcp-go or gobreaker types.
var coreThirdParty = map[string]bool{}

type listed struct {
	ImportPath string
	Imports    []string
	Standard   bool
}

func listPackages(t *testing.T) []listed {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []listed
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 8 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

func TestImportDirection(t *testing.T) {
	for _, p := range listPackages(t) {
		from := layer(p.ImportPath)
		ok, known := rule(from)
		if !known {
			t.Errorf("%s: layer %q has no rule in archtest; add one that follows DESIGN.md", p.ImportPath, from)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			to := layer(imp)
			if to == from {
				continue
			}
			if !permits(ok, to) {
				t.Errorf("%s imports %s: %s may not depend on %s (DESIGN.md import direction)", p.ImportPath, imp, from, to)
			}
		}
	}
}

func TestCoreHasNoThirdPartyTypes(t *testing.T) {
	for _, p := range listPackages(t) {
		if layer(p.ImportPath) != "gateway" {
			continue
		}
		for _, imp := range p.Imports {
			first, _, _ := strings.Cut(imp, "/")
			std := !strings.Contains(first, ".")
			if std || strings.HasPrefix(imp, module+"/") || coreThirdParty[imp] {
				continue
			}
			t.Errorf("%s imports %s: third-party types stay out of the core (DESIGN.md)", p.ImportPath, imp)
		}
	}
}

func TestLayerNames(t *testing.T) {
	tests := map[string]string{
		module + "/gateway":              "gateway",
		module + "/server":               "server",
		module + "/configs/loader":       "configs/loader",
		module + "/faces/httprpc":        "faces/httprpc",
		module + "/faces":                "faces",
		module + "/state/statetest":      "state",
		module + "/codecs/jsonrpc":       "codecs",
		module + "/cmd/gatehouse":        "cmd",
		module + "/internal/benchreport": "internal",
		module + "/server/testing":       "server",
		module + "/examples/clients/go":  "examples",
	}
	for in, want := range tests {
		if got := layer(in); got != want {
			t.Errorf("layer(%s) = %s, want %s", path.Base(in), got, want)
		}
	}
}
