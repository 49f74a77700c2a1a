package capability_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
)

var update = flag.Bool("update", false, "rewrite testdata/tools_list.json from the installed npm MCP servers")

// goldenFile holds the tools/list results of server-everything, server-filesystem and
// server-memory, recorded through the bridge (TestToolsListGolden -update), so that the
// token figures are computed offline and deterministically.
const goldenFile = "testdata/tools_list.json"

// goldenServers are the upstreams of the golden file, in its order.
var goldenServers = []string{"everything", "filesystem", "memory"}

// golden is the golden file: each server's tools/list result.
type golden map[string]struct {
	Tools []json.RawMessage `json:"tools"`
}

func readGolden(t testing.TB) golden {
	t.Helper()
	data, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

// entries returns the golden tools as the bridge's catalog entries.
func (g golden) entries(t testing.TB) []mcpbackend.Entry {
	t.Helper()
	var out []mcpbackend.Entry
	for _, s := range goldenServers {
		for _, def := range g[s].Tools {
			var d struct {
				Name string `json:"name"`
			}
			if err := json.Unmarshal(def, &d); err != nil {
				t.Fatal(err)
			}
			out = append(out, mcpbackend.Entry{Name: d.Name, Upstream: s, UpstreamName: d.Name, Definition: def, Available: true})
		}
	}
	return out
}

// toolsList returns one tools/list result holding every golden tool, as an MCP client of
// all three servers through one gateway receives it (compact JSON).
func (g golden) toolsList() []byte {
	var all []json.RawMessage
	for _, s := range goldenServers {
		all = append(all, g[s].Tools...)
	}
	out, _ := json.Marshal(map[string]any{"tools": all})
	var buf bytes.Buffer
	_ = json.Compact(&buf, out)
	return buf.Bytes()
}

// TestToolsListGolden checks that the golden tools/list results are still what the
// installed servers return (and rewrites them with -update).
func TestToolsListGolden(t *testing.T) {
	dir := t.TempDir()
	target := startBridge(t,
		fast(mcpbackend.Config{Name: "everything", Stdio: &mcpbackend.StdioConfig{Command: npmServer(t, "mcp-server-everything"), Args: []string{"stdio"}},
			Names: mcpbackend.NamesConfig{Mode: mcpbackend.PrefixNever}}),
		fast(mcpbackend.Config{Name: "filesystem", Stdio: &mcpbackend.StdioConfig{Command: npmServer(t, "mcp-server-filesystem"), Args: []string{dir}},
			Names: mcpbackend.NamesConfig{Mode: mcpbackend.PrefixNever}}),
		fast(mcpbackend.Config{Name: "memory", Stdio: &mcpbackend.StdioConfig{Command: npmServer(t, "mcp-server-memory"),
			Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "memory.jsonl")}}, Names: mcpbackend.NamesConfig{Mode: mcpbackend.PrefixNever}}),
	)
	live := golden{}
	for _, e := range target.Catalog().Tools {
		if !e.Available {
			t.Fatalf("tool %s unavailable: %s", e.Name, e.Reason)
		}
		s := live[e.Upstream]
		s.Tools = append(s.Tools, e.Definition)
		live[e.Upstream] = s
	}
	if *update {
		writeGolden(t, live)
		return
	}
	want := readGolden(t)
	for _, s := range goldenServers {
		if !reflect.DeepEqual(decodeJSON(t, must(json.Marshal(live[s]))), decodeJSON(t, must(json.Marshal(want[s])))) {
			t.Errorf("%s: tools/list differs from %s; run go test -run TestToolsListGolden -update", s, goldenFile)
		}
	}
	// The catalog the registry builds from the live bridge is the one the token figures
	// are computed from.
	r, err := capability.New(capability.Config{}, capability.MCPSource(target))
	if err != nil {
		t.Fatal(err)
	}
	offline := newRegistry(t, capability.Config{}, capability.MCPTools(want.entries(t), "mcp.")...)
	if r.Version() != offline.Version() {
		t.Fatal("the live catalog's version differs from the golden one's")
	}
}

func writeGolden(t *testing.T, g golden) {
	t.Helper()
	var doc bytes.Buffer
	doc.WriteString("{")
	for i, s := range goldenServers {
		if i > 0 {
			doc.WriteString(",")
		}
		doc.WriteString(`"` + s + `":{"tools":[`)
		for k, def := range g[s].Tools {
			if k > 0 {
				doc.WriteString(",")
			}
			doc.Write(def)
		}
		doc.WriteString("]}")
	}
	doc.WriteString("}")
	var out bytes.Buffer
	if err := json.Indent(&out, doc.Bytes(), "", "  "); err != nil {
		t.Fatal(err)
	}
	out.WriteByte('\n')
	if err := os.WriteFile(goldenFile, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tokenFigures are the token counts of one catalog's discover results against its
// tools/list.
type tokenFigures struct {
	caps                           int
	toolsList, l0, l1, l2, compact int
}

func figures(t testing.TB) tokenFigures {
	t.Helper()
	g := readGolden(t)
	r := newRegistry(t, capability.Config{}, capability.MCPTools(g.entries(t), "mcp.")...)
	f := tokenFigures{caps: len(r.Capabilities()), toolsList: nekte.Tokens(g.toolsList())}
	for level, dst := range []*int{&f.l0, &f.l1, &f.l2} {
		out, err := r.Discover(nekte.DiscoverParams{Level: level})
		if err != nil {
			t.Fatal(err)
		}
		*dst = nekte.Tokens(out)
	}
	out, err := r.DiscoverWith(nekte.DiscoverParams{}, capability.DiscoverOptions{Shape: capability.ShapeCompact})
	if err != nil {
		t.Fatal(err)
	}
	f.compact = nekte.Tokens(out)
	return f
}

// TestTokenTargets holds the aims on the golden catalog: the standard L0 catalog
// at most 12% of tools/list, the compact shape at most 8 tokens per capability.
func TestTokenTargets(t *testing.T) {
	f := figures(t)
	if f.caps < 20 {
		t.Fatalf("only %d capabilities in the golden catalog", f.caps)
	}
	l0 := float64(f.l0) / float64(f.toolsList)
	perCap := float64(f.compact) / float64(f.caps)
	t.Logf("%d tools: tools/list %d tokens; L0 %d (%.1f%%), L1 %d, L2 %d, compact %d (%.1f per capability)",
		f.caps, f.toolsList, f.l0, 100*l0, f.l1, f.l2, f.compact, perCap)
	if l0 > 0.12 {
		t.Errorf("L0 is %.1f%% of tools/list, aim ≤ 12%%", 100*l0)
	}
	if perCap > 8 {
		t.Errorf("compact L0 is %.1f tokens per capability, aim ≤ 8", perCap)
	}
}

// BenchmarkDiscoverTokens reports the token figures of `make bench` (cl100k, offline, the
// golden catalog of server-everything + server-filesystem + server-memory): tokens per
// capability of discover at L0, L1, L2 and of the compact L0 shape, and each whole result
// ÷ the tools/list result of the same tools. The time is that of one L0 discover.
func BenchmarkDiscoverTokens(b *testing.B) {
	f := figures(b)
	g := readGolden(b)
	r := newRegistry(b, capability.Config{}, capability.MCPTools(g.entries(b), "mcp.")...)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Discover(nekte.DiscoverParams{}); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(f.caps)
	b.ReportMetric(float64(f.toolsList)/n, "tools-list-tok/cap")
	b.ReportMetric(float64(f.l0)/n, "L0-tok/cap")
	b.ReportMetric(float64(f.l1)/n, "L1-tok/cap")
	b.ReportMetric(float64(f.l2)/n, "L2-tok/cap")
	b.ReportMetric(float64(f.compact)/n, "compact-tok/cap")
	b.ReportMetric(float64(f.l0)/float64(f.toolsList), "L0/tools-list")
	b.ReportMetric(float64(f.l1)/float64(f.toolsList), "L1/tools-list")
	b.ReportMetric(float64(f.l2)/float64(f.toolsList), "L2/tools-list")
	b.ReportMetric(float64(f.compact)/float64(f.toolsList), "compact/tools-list")
}
