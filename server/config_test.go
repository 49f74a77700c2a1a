package server

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/configs"
	"github.com/gatehouse-dev/gatehouse/configs/loader"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// TestSchemaMatchesConfig walks the Config struct and the JSON Schema side by side: every
// yaml key of the structs is a property of the schema at the same path and vice versa, so
// the schema editors see is the file the loader accepts.
func TestSchemaMatchesConfig(t *testing.T) {
	var schema map[string]any
	if err := json.Unmarshal(schemas.ConfigSchema, &schema); err != nil {
		t.Fatal(err)
	}
	compareShape(t, "", reflect.TypeFor[Config](), schema, schema)
}

func compareShape(t *testing.T, path string, typ reflect.Type, node, root map[string]any) {
	t.Helper()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if ref, ok := node["$ref"].(string); ok {
		node = resolveRef(t, root, ref)
	}
	switch typ.Kind() {
	case reflect.Struct:
		if typ == reflect.TypeFor[time.Duration]() {
			return
		}
		props, _ := node["properties"].(map[string]any)
		if node["additionalProperties"] != false {
			t.Errorf("%s: schema object must set additionalProperties: false", orRoot(path))
		}
		fields := yamlFields(typ)
		for _, name := range sortedKeys(fields) {
			sub, ok := props[name].(map[string]any)
			if !ok {
				t.Errorf("%s.%s: in the Go config but not in schemas/config.schema.json", orRoot(path), name)
				continue
			}
			compareShape(t, path+"."+name, fields[name], sub, root)
		}
		for name := range props {
			if _, ok := fields[name]; !ok {
				t.Errorf("%s.%s: in the schema but not in the Go config", orRoot(path), name)
			}
		}
	case reflect.Map:
		add, ok := node["additionalProperties"].(map[string]any)
		if !ok {
			t.Errorf("%s: a map needs an additionalProperties schema", path)
			return
		}
		compareShape(t, path+".*", typ.Elem(), add, root)
	case reflect.Slice:
		items, ok := node["items"].(map[string]any)
		if !ok {
			t.Errorf("%s: an array needs an items schema", path)
			return
		}
		compareShape(t, path+"[]", typ.Elem(), items, root)
	}
}

// yamlFields returns the yaml keys of a struct's fields, those of its inline embedded
// structs included.
func yamlFields(typ reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for f := range typ.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if f.Anonymous && name == "" && opts == "inline" {
			maps.Copy(fields, yamlFields(f.Type))
			continue
		}
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		fields[name] = f.Type
	}
	return fields
}

func resolveRef(t *testing.T, root map[string]any, ref string) map[string]any {
	t.Helper()
	node := root
	for part := range strings.SplitSeq(strings.TrimPrefix(ref, "#/"), "/") {
		next, ok := node[part].(map[string]any)
		if !ok {
			t.Fatalf("unresolvable $ref %s", ref)
		}
		node = next
	}
	return node
}

func orRoot(p string) string {
	if p == "" {
		return "(root)"
	}
	return strings.TrimPrefix(p, ".")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestShippedConfigsAreValid(t *testing.T) {
	if _, err := Default(); err != nil {
		t.Fatalf("embedded default: %v", err)
	}
	onDisk, err := os.ReadFile("../configs/gatehouse.yaml")
	if err != nil || string(onDisk) != string(configs.Default) {
		t.Fatal("configs/gatehouse.yaml and the embedded default differ")
	}
	// configs/examples/redis.yaml wants the MCP session key every replica shares.
	t.Setenv("GATEHOUSE_MCP_SESSION_KEY", "0123456789abcdef0123456789abcdef")
	// configs/examples/tls.yaml finds its certificates there (read when serving, not here).
	t.Setenv("GATEHOUSE_CERT_DIR", t.TempDir())
	files, _ := filepath.Glob("../configs/examples/*.yaml")
	for _, f := range append(files, "../configs/gatehouse.yaml") {
		if _, err := Load(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestDefaultConfigIsLoopbackAnonymousDemo(t *testing.T) {
	cfg, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Boundary.Addr != "127.0.0.1:8080" || cfg.Server.Admin.Addr != "127.0.0.1:9901" {
		t.Errorf("listeners %q %q", cfg.Server.Boundary.Addr, cfg.Server.Admin.Addr)
	}
	if cfg.Auth.Anonymous == nil || cfg.Routing.Demo == nil || cfg.WebSocket == nil {
		t.Error("the default must allow anonymous loopback access to the demo over HTTP and WebSocket")
	}
}

func TestConfigErrors(t *testing.T) {
	t.Setenv("GH_ADDR", "127.0.0.1:18080")
	tests := []struct {
		name string
		yaml string
		want []string // substrings of the error, each "line:col: …" where positioned
	}{
		{"unknown key at depth", "server:\n  boundary:\n    adr: x\n", []string{`test.yaml:3:5`, `adr`}},
		{"several problems at once", "batch:\n  max_size: 0\n  tiers: {gold: x}\nlog: {level: loud}\n",
			[]string{"test.yaml:2:", "test.yaml:3:", "test.yaml:4:"}},
		{"duplicate key", "log: {level: info}\nlog: {level: debug}\n", []string{"test.yaml:2:1"}},
		{"bad duration", "deadline: {default: soon}\n", []string{"test.yaml:1:"}},
		{"default past max", "deadline: {default: 10m, max: 1m}\n", []string{"test.yaml:1:", "default (10m0s) is longer than max (1m0s)"}},
		{"epsilon not below default", "deadline: {default: 1s, min_remaining: 1s}\n", []string{"min_remaining"}},
		{"bad address", "server: {boundary: {addr: \"nohost:99999x\"}}\n", []string{"test.yaml:1:"}},
		{"openrpc cache past its bound", "openrpc: {cache_size: 100001}\n", []string{"test.yaml:1:", "cache_size"}},
		{"negative openrpc cache", "openrpc: {cache_size: -1}\n", []string{"test.yaml:1:", "cache_size"}},
		{"negative tools_changed_delay", "mcp_face: {tools_changed_delay: -1s}\n", []string{"test.yaml:1:", "tools_changed_delay"}},
		{"negative forwarded_progress_buffer", "server: {internal: {addr: \"127.0.0.1:0\"}}\nagents: {forwarded_progress_buffer: -1}\n",
			[]string{"forwarded_progress_buffer"}},
		{"negative gc_heap_floor_mib", "server: {gc_heap_floor_mib: -1}\n", []string{"test.yaml:1:", "gc_heap_floor_mib"}},
		{"gc_heap_floor_mib past its bound", "server: {gc_heap_floor_mib: 1048577}\n", []string{"test.yaml:1:", "gc_heap_floor_mib"}},
		{"undefined env var", "server: {boundary: {addr: \"${GH_NOPE}\"}}\n", []string{"test.yaml:1:", "GH_NOPE"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("test.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatal("accepted")
			}
			if _, ok := errors.AsType[loader.ErrorList](err); !ok {
				t.Fatalf("error is %T, want loader.ErrorList: %v", err, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	cfg, err := Parse("test.yaml", []byte("server: {boundary: {addr: \"${GH_ADDR}\"}}\n"))
	if err != nil || cfg.Server.Boundary.Addr != "127.0.0.1:18080" {
		t.Fatalf("env interpolation: %v %+v", err, cfg)
	}
}

// TestGCHeapFloor: server.gc_heap_floor_mib's default, its edges and 0 (off).
func TestGCHeapFloor(t *testing.T) {
	for _, c := range []struct {
		yaml string
		want uint64
	}{
		{"{}\n", DefaultGCHeapFloorMiB << 20},
		{"server: {gc_heap_floor_mib: 0}\n", 0},
		{"server: {gc_heap_floor_mib: 1}\n", 1 << 20},
		{"server: {gc_heap_floor_mib: 1048576}\n", MaxGCHeapFloorMiB << 20},
	} {
		cfg, err := Parse("test.yaml", []byte(c.yaml))
		if err != nil {
			t.Fatalf("%q: %v", c.yaml, err)
		}
		if got := cfg.GCHeapFloor(); got != c.want {
			t.Errorf("%q: GCHeapFloor() = %d, want %d", c.yaml, got, c.want)
		}
	}
}

func TestEmptyFileTakesDefaults(t *testing.T) {
	cfg, err := Parse("empty.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Batch.MaxSize != faces.DefaultBatchMaxSize || cfg.Deadline.Default == 0 || cfg.WebSocket != nil || cfg.Routing.Demo != nil {
		t.Fatalf("defaults: %+v", cfg)
	}
}

func TestListenOverrides(t *testing.T) {
	cfg, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	ListenOverrides{BoundaryAddr: "127.0.0.1:1", AdminAddr: "127.0.0.1:2"}.Apply(cfg)
	if cfg.Server.Boundary.Addr != "127.0.0.1:1" || cfg.Server.Admin.Addr != "127.0.0.1:2" {
		t.Fatal("overrides not applied")
	}
	ListenOverrides{}.Apply(cfg)
	if cfg.Server.Boundary.Addr != "127.0.0.1:1" {
		t.Fatal("empty overrides changed the config")
	}
}
