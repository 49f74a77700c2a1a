package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/schemas"
)

// TestEveryConfigKeyIsDocumented walks the config schema and checks that every key is named
// in docs/ (as `key` in a table or text), so no knob ships undocumented.
func TestEveryConfigKeyIsDocumented(t *testing.T) {
	var docs strings.Builder
	files, _ := filepath.Glob("../docs/*.md")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs.Write(b)
	}
	var schema map[string]any
	if err := json.Unmarshal(schemas.ConfigSchema, &schema); err != nil {
		t.Fatal(err)
	}
	var missing []string
	var walk func(node map[string]any, path string)
	walk = func(node map[string]any, path string) {
		if ref, ok := node["$ref"].(string); ok {
			node = resolveRef(t, schema, ref)
		}
		if items, ok := node["items"].(map[string]any); ok {
			walk(items, path)
		}
		props, _ := node["properties"].(map[string]any)
		for name, sub := range props {
			full := strings.TrimPrefix(path+"."+name, ".")
			// A key is documented when its full path or, inside a per-entry table (a gRPC
			// backend, an MCP server), its own name appears in code quotes.
			if !strings.Contains(docs.String(), "`"+full+"`") && !strings.Contains(docs.String(), "`"+name+"`") {
				missing = append(missing, full)
			}
			if m, ok := sub.(map[string]any); ok {
				walk(m, full)
			}
		}
	}
	walk(schema, "")
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("config keys not documented in docs/*.md:\n  %s", strings.Join(missing, "\n  "))
	}
}
