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
// except that the gateway core, gateway/server and the gateway/* infrastructure packages
// are layers of their own.
func layer(pkg string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
	parts := strings.SplitN(rel, "/", 3)
	switch {
	case parts[0] == "gateway" && len(parts) == 1:
		return "gateway"
	case parts[0] == "gateway" && parts[1] == "server":
		return "gateway/server"
	case parts[0] == "gateway":
		return "gateway/" + parts[1]
	}
	return parts[0]
}

// allowed lists, per layer, the module layers it may import. A layer absent from the map
// may import nothing of the module.
var allowed = map[string][]string{
	"schemas":        {},
	"configs":        {},
	"gateway/config": {"schemas"},
	"codecs":         {"schemas"},
	"gateway":        {"schemas", "codecs"},
	"gateway/state":  {"schemas", "codecs", "gateway"},
	"auth":           {"schemas", "codecs", "gateway", "gateway/state"},
	"routing":        {"schemas", "codecs", "gateway", "gateway/state"},
	"resilience":     {"schemas", "codecs", "gateway", "gateway/state"},
	"observability":  {"schemas", "codecs", "gateway", "gateway/state"},
	"gateway/server": {"schemas", "codecs", "gateway", "gateway/state", "gateway/config", "configs", "auth", "routing", "resilience", "observability"},
	"deploy":         {"schemas", "gateway/config", "gateway/server"},
	"cmd":            {"schemas", "codecs", "gateway", "gateway/state", "gateway/config", "configs", "auth", "routing", "resilience", "observability", "gateway/server"},
	"internal":       {"schemas", "codecs", "gateway", "gateway/state", "gateway/config", "configs", "auth", "routing", "resilience", "observability", "gateway/server"},
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
		ok, known := allowed[from]
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
			if !contains(ok, to) {
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
		module + "/gateway":                "gateway",
		module + "/gateway/server":         "gateway/server",
		module + "/gateway/config":         "gateway/config",
		module + "/codecs/jsonrpc":         "codecs",
		module + "/cmd/gatehouse":          "cmd",
		module + "/internal/benchreport":   "internal",
		module + "/gateway/server/testing": "gateway/server",
	}
	for in, want := range tests {
		if got := layer(in); got != want {
			t.Errorf("layer(%s) = %s, want %s", path.Base(in), got, want)
		}
	}
}

func contains(list []string, s string) bool {
	return slices.Contains(list, s)
}
