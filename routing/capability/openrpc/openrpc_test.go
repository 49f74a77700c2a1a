package openrpc_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/gatehouse-dev/gatehouse/internal/openrpctest"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/routing/capability/openrpc"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// doc is the part of a document the tests read.
type doc struct {
	OpenRPC string `json:"openrpc"`
	Info    struct {
		Title, Version string
	} `json:"info"`
	Servers []struct {
		Name, URL string
	} `json:"servers"`
	Methods []struct {
		Name           string `json:"name"`
		Summary        string `json:"summary"`
		Description    string `json:"description"`
		ParamStructure string `json:"paramStructure"`
		Tags           []struct {
			Name string `json:"name"`
		} `json:"tags"`
		Params []struct {
			Name     string          `json:"name"`
			Required bool            `json:"required"`
			Schema   json.RawMessage `json:"schema"`
		} `json:"params"`
		Result struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
		} `json:"result"`
		Errors []struct {
			Ref string `json:"$ref"`
		} `json:"errors"`
	} `json:"methods"`
	Components struct {
		Errors map[string]struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"errors"`
		Schemas map[string]json.RawMessage `json:"schemas"`
	} `json:"components"`
	CatalogVersion string `json:"x-catalog-version"`
}

func decode(t *testing.T, raw []byte) doc {
	t.Helper()
	var d doc
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("the document is not JSON: %v\n%s", err, raw)
	}
	return d
}

func (d doc) names() []string {
	var out []string
	for _, m := range d.Methods {
		out = append(out, m.Name)
	}
	return out
}

// fixture is a catalog with a capability of every kind and every shape of input.
func fixture(t testing.TB) *capability.Registry {
	t.Helper()
	caps := []capability.Capability{
		{ID: "subtract", Method: "subtract", Kind: capability.KindBuiltin, Source: "demo",
			Description: "Subtracts subtrahend from minuend. Returns the difference.",
			Input:       json.RawMessage(`{"type":"object","properties":{"minuend":{"type":"number","description":"What is subtracted from."},"subtrahend":{"type":"number"}},"required":["minuend"]}`),
			Output:      json.RawMessage(`{"type":"number"}`)},
		{ID: "sum", Method: "sum", Kind: capability.KindBuiltin, Source: "demo", Description: "Adds numbers.",
			Input: json.RawMessage(`{"type":"array","items":{"type":"number"}}`), Output: json.RawMessage(`{"type":"number"}`)},
		{ID: "echo", Method: "mcp.echo", Kind: capability.KindMCPTool, Source: "everything", Description: "Echoes.",
			Input: json.RawMessage(`{"properties":{"message":{"type":"string"}}}`)},
		{ID: "calc.count", Method: "calc.count", Kind: capability.KindGRPCMethod, Source: "calculator", Streaming: true,
			Description: "Counts.", Input: json.RawMessage(`{"type":"object","properties":{"from":{"type":"integer"},"to":{"type":"integer"}}}`),
			Output: json.RawMessage(`{"type":"array","items":{"type":"object"}}`)},
		{ID: "agents.matmul", Method: "agents.matmul", Kind: capability.KindAgentOperator, Source: "agents", Category: "agent",
			Description: "Multiplies matrices.",
			Input: json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/$defs/m"},"b":{"$ref":"#/$defs/m"}},"required":["a","b"],` +
				`"$defs":{"m":{"type":"array","items":{"type":"array","items":{"type":"number"}}}}}`),
			Output: json.RawMessage(`{"type":"object","properties":{"next":{"$ref":"#"}}}`)},
	}
	r, err := capability.New(capability.Config{}, capability.Static(caps...))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func generator(t testing.TB, r *capability.Registry) *openrpc.Generator {
	t.Helper()
	return openrpc.New(openrpc.Params{Catalog: r, Version: "v1.2.3",
		Builtins: append(openrpc.NEKTEMethods(), openrpc.Method{Name: "x.raw", Description: "Served by x."}),
		Servers:  []openrpc.Server{{Name: "http", URL: "http://localhost:8080/rpc"}}})
}

// TestDocumentFitsTheMetaSchema validates the generated document against the official
// OpenRPC meta-schema, and compiles every params and result schema in place, so that the
// references rewritten into components resolve.
func TestDocumentFitsTheMetaSchema(t *testing.T) {
	openrpctest.Check(t, generator(t, fixture(t)).Document(openrpc.View{}))
}

// TestMetaSchemaRefusesABrokenDocument shows the validation above can fail.
func TestMetaSchemaRefusesABrokenDocument(t *testing.T) {
	meta, err := openrpctest.MetaSchema()
	if err != nil {
		t.Fatal(err)
	}
	for _, broken := range []string{
		`{"openrpc":"1.3.2","info":{"title":"x","version":"1"}}`,                                        // no methods
		`{"openrpc":"9.9.9","info":{"title":"x","version":"1"},"methods":[]}`,                           // unknown version
		`{"openrpc":"1.3.2","info":{"title":"x","version":"1"},"methods":[{"name":"m"}]}`,               // no params
		`{"openrpc":"1.3.2","info":{"title":"x","version":"1"},"methods":[{"name":"m","params":[{}]}]}`, // descriptor without name
	} {
		inst, _ := jsonschema.UnmarshalJSON(strings.NewReader(broken))
		if meta.Validate(inst) == nil {
			t.Errorf("the meta-schema accepts %s", broken)
		}
	}
}

func TestMethods(t *testing.T) {
	d := decode(t, generator(t, fixture(t)).Document(openrpc.View{}))
	if d.OpenRPC != "1.3.2" || d.Info.Title != "Gatehouse" || d.Info.Version != "v1.2.3" || len(d.Servers) != 1 || d.Servers[0].URL != "http://localhost:8080/rpc" || d.CatalogVersion == "" {
		t.Fatalf("document head: %+v", d)
	}
	want := []string{"agents.matmul", "calc.count", "mcp.echo", "nekte.context", "nekte.delegate", "nekte.discover", "nekte.introspect",
		"nekte.invoke", "nekte.task.cancel", "nekte.task.resume", "nekte.task.status", "nekte.task.stream", "nekte.task.suspend",
		"nekte.verify", "subtract", "sum", "x.raw"}
	if got := d.names(); !slices.Equal(got, want) {
		t.Fatalf("methods\n got %v\nwant %v", got, want)
	}
	type param struct {
		name     string
		required bool
	}
	tests := []struct {
		method, structure, summary, tag string
		params                          []param
		result                          string
		errors                          []string // beyond the common ones
	}{
		{"subtract", "by-name", "Subtracts subtrahend from minuend.", "demo",
			[]param{{"minuend", true}, {"subtrahend", false}}, `{"type":"number"}`, nil},
		{"sum", "", "Adds numbers.", "demo", []param{{"params", false}}, `{"type":"number"}`, nil},
		{"mcp.echo", "by-name", "Echoes.", "everything", []param{{"message", false}}, `{}`, []string{"TOOL_FAILED"}},
		{"calc.count", "by-name", "Counts.", "calculator", []param{{"from", false}, {"to", false}},
			`{"type":"array","items":{"type":"object"}}`, []string{"AGENT_EXECUTION_FAILED", "AUTHENTICATION_FAILED", "INSUFFICIENT_SCOPE", "RATE_LIMITED", "METHOD_NOT_FOUND"}},
		{"agents.matmul", "by-name", "Multiplies matrices.", "agent", []param{{"a", true}, {"b", true}},
			`{"properties":{"next":{"$ref":"#/components/schemas/agents.matmul.result"}},"type":"object"}`,
			[]string{"AGENT_TASK_REJECTED", "AGENT_TASK_FAILED", "AGENT_TASK_TIMEOUT", "AGENT_GONE", "NO_AGENT"}},
		{"nekte.invoke", "by-name", "Runs a capability on an input and answers its result at the level the budget allows.", "nekte",
			[]param{{"cap", true}, {"h", false}, {"in", false}, {"budget", false}}, "",
			[]string{"VERSION_MISMATCH", "CAPABILITY_NOT_FOUND", "BUDGET_EXCEEDED", "PAYLOAD_TOO_LARGE"}},
		{"x.raw", "", "Served by x.", "", []param{{"params", false}}, `{}`, nil},
	}
	common := []string{"INVALID_PARAMS", "INTERNAL_ERROR", "DEADLINE_EXCEEDED", "CANCELLED", "UNAVAILABLE", "SHUTTING_DOWN"}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			i := slices.Index(d.names(), tt.method)
			m := d.Methods[i]
			var params []param
			for _, p := range m.Params {
				params = append(params, param{p.Name, p.Required})
			}
			var tags []string
			for _, tg := range m.Tags {
				tags = append(tags, tg.Name)
			}
			if m.ParamStructure != tt.structure || m.Summary != tt.summary || !slices.Equal(params, tt.params) || strings.Join(tags, ",") != tt.tag {
				t.Errorf("got %s %q %v tags %v, want %s %q %v tag %q", m.ParamStructure, m.Summary, params, tags, tt.structure, tt.summary, tt.params, tt.tag)
			}
			if tt.result != "" && string(m.Result.Schema) != tt.result {
				t.Errorf("result %s, want %s", m.Result.Schema, tt.result)
			}
			var errs []string
			for _, e := range m.Errors {
				name := strings.TrimPrefix(e.Ref, "#/components/errors/")
				if _, ok := d.Components.Errors[name]; !ok {
					t.Errorf("error %s is not in components", e.Ref)
				}
				errs = append(errs, name)
			}
			if want := append(slices.Clone(common), tt.errors...); !slices.Equal(errs, want) {
				t.Errorf("errors %v, want %v", errs, want)
			}
		})
	}
}

// TestReferencesPointIntoComponents: a schema with local references is kept whole under
// components.schemas, and the descriptors cut from it refer there.
func TestReferencesPointIntoComponents(t *testing.T) {
	d := decode(t, generator(t, fixture(t)).Document(openrpc.View{}))
	m := d.Methods[slices.Index(d.names(), "agents.matmul")]
	if got := string(m.Params[0].Schema); got != `{"$ref":"#/components/schemas/agents.matmul.params/$defs/m"}` {
		t.Fatalf("param a = %s", got)
	}
	whole := string(d.Components.Schemas["agents.matmul.params"])
	if !strings.Contains(whole, `"$defs":{"m":`) || !strings.Contains(whole, `"#/components/schemas/agents.matmul.params/$defs/m"`) {
		t.Fatalf("components.schemas[agents.matmul.params] = %s", whole)
	}
	if _, ok := d.Components.Schemas["subtract.params"]; ok {
		t.Fatal("a schema without references was copied into components")
	}
	e := d.Components.Errors["TOOL_FAILED"]
	if k := schemas.KindOf(schemas.CodeToolFailed); e.Code != int(k.Code) || e.Message != k.Message {
		t.Fatalf("TOOL_FAILED = %+v", e)
	}
}

// TestView: a caller never learns of a method its view hides, and each view gets its own
// document.
func TestView(t *testing.T) {
	g := generator(t, fixture(t))
	tests := []struct {
		name   string
		view   openrpc.View
		hidden []string
	}{
		{"everything", openrpc.View{}, nil},
		{"no MCP tools", openrpc.View{Capability: func(c capability.Capability) bool { return c.Kind != capability.KindMCPTool }}, []string{"mcp.echo"}},
		{"no tasks", openrpc.View{Method: func(m string) bool { return !strings.HasPrefix(m, "nekte.task.") }},
			[]string{"nekte.task.cancel", "nekte.task.resume", "nekte.task.status", "nekte.task.stream", "nekte.task.suspend"}},
		{"nothing", openrpc.View{Capability: func(capability.Capability) bool { return false }, Method: func(string) bool { return false }},
			[]string{"subtract", "nekte.discover", "x.raw"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := g.Document(tt.view)
			names := decode(t, raw).names()
			for _, h := range tt.hidden {
				if slices.Contains(names, h) || bytes.Contains(raw, []byte(`"`+h+`"`)) {
					t.Errorf("%s is in the document of a caller who may not see it", h)
				}
			}
			if tt.hidden == nil && len(names) != 17 {
				t.Errorf("%d methods, want all 17", len(names))
			}
		})
	}
}

// TestCache: a repeated view is answered from the cache; a catalog change is seen at once.
func TestCache(t *testing.T) {
	r := fixture(t)
	g := generator(t, r)
	hideMCP := openrpc.View{Capability: func(c capability.Capability) bool { return c.Kind != capability.KindMCPTool }}
	a, b := g.Document(openrpc.View{}), g.Document(openrpc.View{})
	if &a[0] != &b[0] {
		t.Fatal("a repeated view was written again")
	}
	if c := g.Document(hideMCP); &c[0] == &a[0] || bytes.Equal(c, a) {
		t.Fatal("another view got the same document")
	}
	r.Update([]capability.Capability{{ID: "added", Method: "added", Kind: capability.KindBuiltin, Description: "Added."}})
	if names := decode(t, g.Document(openrpc.View{})).names(); !slices.Contains(names, "added") {
		t.Fatalf("the catalog changed but the document did not: %v", names)
	}
	small := openrpc.New(openrpc.Params{Catalog: r, CacheSize: 1})
	first := small.Document(openrpc.View{})
	small.Document(hideMCP) // evicts the first
	if again := small.Document(openrpc.View{}); &again[0] == &first[0] || !bytes.Equal(again, first) {
		t.Fatal("a cache of one kept two documents, or wrote a different one")
	}
}

// BenchmarkDocumentRepeat is a repeated rpc.discover of one view: answered from the cache.
func BenchmarkDocumentRepeat(b *testing.B) {
	g := openrpc.New(openrpc.Params{Catalog: fixture(b), Builtins: openrpc.NEKTEMethods()})
	v := openrpc.View{Capability: func(capability.Capability) bool { return true }, Method: func(string) bool { return true }}
	b.ReportAllocs()
	for b.Loop() {
		g.Document(v)
	}
}

// BenchmarkDocumentWrite writes the document on every call: two views alternate in a cache
// of one, so each misses. The baseline of BenchmarkDocumentRepeat.
func BenchmarkDocumentWrite(b *testing.B) {
	g := openrpc.New(openrpc.Params{Catalog: fixture(b), Builtins: openrpc.NEKTEMethods(), CacheSize: 1})
	views := []openrpc.View{
		{Capability: func(capability.Capability) bool { return true }, Method: func(string) bool { return true }},
		{Capability: func(capability.Capability) bool { return true }, Method: func(m string) bool { return m != "nekte.verify" }},
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		g.Document(views[i%2])
		i++
	}
}

func TestConfig(t *testing.T) {
	tests := []struct {
		size, want int
		ok         bool
	}{
		{0, openrpc.DefaultCacheSize, true},
		{1, 1, true},
		{openrpc.MaxCacheSize, openrpc.MaxCacheSize, true},
		{-1, 0, false},
		{openrpc.MaxCacheSize + 1, 0, false},
	}
	for _, tt := range tests {
		c := openrpc.Config{CacheSize: tt.size}
		err := c.Validate()
		if (err == nil) != tt.ok {
			t.Errorf("cache_size %d: Validate = %v, want ok %v", tt.size, err, tt.ok)
		}
		if got := c.WithDefaults().CacheSize; tt.ok && got != tt.want {
			t.Errorf("cache_size %d: with defaults %d, want %d", tt.size, got, tt.want)
		}
	}
}
