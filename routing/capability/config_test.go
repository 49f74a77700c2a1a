package capability_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
)

func TestConfigValidate(t *testing.T) {
	neg, big := -0.1, 1.5
	tests := []struct {
		name string
		cfg  capability.Config
		want string // substring of the error; empty: valid
	}{
		{"zero", capability.Config{}, ""},
		{"full", capability.Config{Agent: "a", HashLength: 16, Categories: map[string]string{"mcp": "tools", "mcp:fs": "files", "grpc:calc": "math", "builtin": "demo"},
			Discover: capability.DiscoverConfig{PageSize: 50, MaxPageSize: 100}, Search: capability.SearchConfig{TopK: 3}}, ""},
		{"hash length", capability.Config{HashLength: 12}, "hash_length"},
		{"agent too long", capability.Config{Agent: strings.Repeat("a", 65)}, "agent"},
		{"category key kind", capability.Config{Categories: map[string]string{"http": "x"}}, `"http"`},
		{"category key name", capability.Config{Categories: map[string]string{"mcp:": "x"}}, "source name"},
		{"category too long", capability.Config{Categories: map[string]string{"mcp": strings.Repeat("c", 33)}}, "1 to 32"},
		{"empty category", capability.Config{Categories: map[string]string{"grpc": ""}}, "1 to 32"},
		{"page size over max", capability.Config{Discover: capability.DiscoverConfig{PageSize: 600}}, "exceeds max_page_size 500"},
		{"negative page", capability.Config{Discover: capability.DiscoverConfig{PageSize: -1}}, "negative"},
		{"negative top_k", capability.Config{Search: capability.SearchConfig{TopK: -1}}, "top_k"},
		{"threshold below", capability.Config{Search: capability.SearchConfig{Threshold: &neg}}, "threshold"},
		{"threshold above", capability.Config{Search: capability.SearchConfig{Threshold: &big}}, "threshold"},
		{"collected bytes", capability.Config{Invoke: capability.InvokeConfig{MaxCollectedBytes: -1}}, "max_collected_bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("got %v, want valid", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want an error with %q", err, tt.want)
			}
			if _, nerr := capability.New(tt.cfg); (nerr == nil) != (tt.want == "") {
				t.Fatalf("New: %v", nerr)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	c := capability.Config{}.WithDefaults()
	if c.Agent != "gatehouse" || c.HashLength != 8 || c.Discover.PageSize != 0 || c.Discover.MaxPageSize != 500 ||
		c.Search.TopK != 10 || *c.Search.Threshold != 0.2 || c.Invoke.MaxCollectedBytes != 4<<20 {
		t.Fatalf("defaults %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	zero := 0.0
	if got := (capability.Config{Search: capability.SearchConfig{Threshold: &zero}}).WithDefaults(); *got.Search.Threshold != 0 {
		t.Fatal("an explicit threshold of 0 was replaced")
	}
}

func TestCategories(t *testing.T) {
	caps := []capability.Capability{
		{ID: "a", Method: "mcp.a", Kind: capability.KindMCPTool, Source: "fs"},
		{ID: "b", Method: "mcp.b", Kind: capability.KindMCPTool, Source: "memory"},
		{ID: "c", Method: "c", Kind: capability.KindGRPCMethod, Source: "calc"},
		{ID: "d", Method: "d", Kind: capability.KindBuiltin, Source: "demo"},
		{ID: "e", Method: "e", Kind: capability.KindBuiltin},
		{ID: "f", Method: "f", Kind: capability.KindGRPCMethod, Source: "calc", Category: "given"},
		{ID: "g", Method: "g", Kind: capability.KindGRPCMethod, Source: strings.Repeat("long", 10)},
	}
	tests := []struct {
		name       string
		categories map[string]string
		want       string // id=cat …
	}{
		{"defaults: the source's name", nil,
			"a=fs b=memory c=calc d=demo e=builtin f=given g=" + strings.Repeat("long", 8)},
		{"per kind and per source", map[string]string{"mcp": "tools", "mcp:fs": "files", "grpc": "rpc", "builtin:demo": "demo-ops"},
			"a=files b=tools c=rpc d=demo-ops e=builtin f=given g=rpc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRegistry(t, capability.Config{Categories: tt.categories}, caps...)
			var got []string
			for _, c := range r.Capabilities() {
				got = append(got, c.ID+"="+c.Category)
			}
			if s := strings.Join(got, " "); s != tt.want {
				t.Fatalf("got  %s\nwant %s", s, tt.want)
			}
		})
	}
}

func TestHashLength(t *testing.T) {
	for _, n := range []int{0, 8, 16} {
		r := newRegistry(t, capability.Config{HashLength: n}, tool("x", "", `{"type":"object"}`))
		c, _ := r.Lookup("x")
		want, _ := nekte.Hash([]byte(`{"type":"object"}`), []byte(`{}`), n)
		if c.Hash != want || len(c.Hash) != max(n, 8) || len(r.Version()) != max(n, 8) {
			t.Fatalf("length %d: h %s (want %s), v %s", n, c.Hash, want, r.Version())
		}
	}
}
