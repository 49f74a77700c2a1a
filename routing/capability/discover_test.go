package capability_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/routing"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// catalog is a small catalog over three sources for the discover tests.
func catalog(t *testing.T, cfg capability.Config) *capability.Registry {
	t.Helper()
	caps := demo.NewSpec(routing.DemoConfig{}).Capabilities()
	caps = append(caps,
		tool("echo", "Echoes back the input message.", `{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`),
		tool("read_file", "Read the complete contents of a file from the file system.", `{"type":"object","properties":{"path":{"type":"string"}}}`),
		tool("list_directory", "Get a detailed listing of all files and directories in a specified path.", `{"type":"object"}`),
		tool("getTinyImage", "Returns the MCP_TINY_IMAGE", `{"type":"object"}`),
	)
	return newRegistry(t, cfg, caps...)
}

func ids(t *testing.T, out []byte) string {
	t.Helper()
	var res struct {
		Caps []struct {
			ID string `json:"id"`
		} `json:"caps"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	var s []string
	for _, c := range res.Caps {
		s = append(s, c.ID)
	}
	return strings.Join(s, " ")
}

func TestDiscoverLevels(t *testing.T) {
	r := newRegistry(t, capability.Config{Agent: "gw"},
		capability.Capability{ID: "sub", Description: "Subtracts.", Method: "subtract", Kind: capability.KindBuiltin, Source: "demo",
			Input: json.RawMessage(`{"type":"array"}`), Output: json.RawMessage(`{"type":"number"}`),
			Examples: []capability.Example{{In: json.RawMessage(`[ 3, 1 ]`), Out: json.RawMessage(`2`)}}},
		tool("echo", "Echoes <input> & more.", `{"type":"object"}`))
	h := func(in, out string) string { return must(nekte.Hash([]byte(in), []byte(out), 8)) }
	hSub, hEcho := h(`{"type":"array"}`, `{"type":"number"}`), h(`{"type":"object"}`, `{}`)
	v := r.Version()
	tests := []struct {
		level int
		want  string
	}{
		{0, `{"agent":"gw","v":"` + v + `","caps":[{"id":"echo","cat":"up","h":"` + hEcho + `"},{"id":"sub","cat":"demo","h":"` + hSub + `"}]}`},
		{1, `{"agent":"gw","v":"` + v + `","caps":[{"id":"echo","cat":"up","h":"` + hEcho + `","desc":"Echoes <input> & more."},` +
			`{"id":"sub","cat":"demo","h":"` + hSub + `","desc":"Subtracts."}]}`},
		{2, `{"agent":"gw","v":"` + v + `","caps":[{"id":"echo","cat":"up","h":"` + hEcho + `","desc":"Echoes <input> & more.","input":{"type":"object"},"output":{}},` +
			`{"id":"sub","cat":"demo","h":"` + hSub + `","desc":"Subtracts.","input":{"type":"array"},"output":{"type":"number"},"examples":[{"in":[3,1],"out":2}]}]}`},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint("L", tt.level), func(t *testing.T) {
			got, err := r.Discover(nekte.DiscoverParams{Level: tt.level})
			if err != nil || string(got) != tt.want {
				t.Fatalf("got  %s (%v)\nwant %s", got, err, tt.want)
			}
		})
	}
	t.Run("L2 entries pass the reference validator", func(t *testing.T) {
		got, _ := r.Discover(nekte.DiscoverParams{Level: 2})
		if err := validateResult[nekte.CapSchema](got); err != nil {
			t.Fatal(err)
		}
	})
}

func TestDiscoverFilters(t *testing.T) {
	r := catalog(t, capability.Config{})
	tests := []struct {
		name   string
		filter nekte.DiscoverFilter
		want   string
	}{
		{"none", nekte.DiscoverFilter{}, "echo getTinyImage get_data list_directory notify_hello read_file subtract sum update"},
		{"category", nekte.DiscoverFilter{Category: "up"}, "echo getTinyImage list_directory read_file"},
		{"id", nekte.DiscoverFilter{ID: "sum"}, "sum"},
		{"id in another category", nekte.DiscoverFilter{ID: "sum", Category: "up"}, ""},
		{"unknown id", nekte.DiscoverFilter{ID: "nope"}, ""},
		{"top_k without query", nekte.DiscoverFilter{TopK: 2}, "echo getTinyImage"},
		{"query", nekte.DiscoverFilter{Query: "read a file"}, "read_file list_directory"},
		{"query ranks id terms", nekte.DiscoverFilter{Query: "files"}, "read_file list_directory"},
		// Equal scores: the shorter description ranks first (BM25's length normalisation).
		{"query and category", nekte.DiscoverFilter{Query: "numbers", Category: "demo"}, "update notify_hello sum"},
		{"query top_k", nekte.DiscoverFilter{Query: "numbers", TopK: 1}, "update"},
		// sum matches "add" and "number" (0.6 of the query), subtract only "subtract" (0.4).
		{"query threshold", nekte.DiscoverFilter{Query: "add numbers subtract", Threshold: 0.5}, "sum"},
		{"query threshold low", nekte.DiscoverFilter{Query: "add numbers subtract", Threshold: 0.3}, "sum subtract"},
		{"camelCase id", nekte.DiscoverFilter{Query: "tiny image"}, "getTinyImage"},
		{"exact id first", nekte.DiscoverFilter{Query: "get_data"}, "get_data getTinyImage list_directory"},
		{"stop words only", nekte.DiscoverFilter{Query: "the of and"}, ""},
		{"no match", nekte.DiscoverFilter{Query: "weather forecast"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := r.Discover(nekte.DiscoverParams{Filter: &tt.filter})
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(t, out); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	r := catalog(t, capability.Config{})
	tests := []struct{ query, want string }{
		{"Echo back hello", "echo"},
		{"subtract 23 from 42", "subtract"},
		{"read the file notes.txt", "read_file"},
		{"book a flight to Lisbon", ""},
		{"", ""},
	}
	for _, tt := range tests {
		c, ok := r.Match(tt.query)
		if ok != (tt.want != "") || c.ID != tt.want {
			t.Errorf("Match(%q) = %q, %v; want %q", tt.query, c.ID, ok, tt.want)
		}
	}
}

func TestDiscoverPagination(t *testing.T) {
	r := catalog(t, capability.Config{})
	all, _ := r.Discover(nekte.DiscoverParams{})
	for _, limit := range []int{1, 2, 4, 9, 20} {
		t.Run(fmt.Sprint("limit ", limit), func(t *testing.T) {
			var got []string
			cursor := ""
			for pages := 0; ; pages++ {
				out, err := r.DiscoverWith(nekte.DiscoverParams{}, capability.DiscoverOptions{Limit: limit, Cursor: cursor})
				if err != nil {
					t.Fatal(err)
				}
				if page := ids(t, out); page != "" {
					got = append(got, page)
				}
				var res struct {
					Next string `json:"next_cursor"`
				}
				_ = json.Unmarshal(out, &res)
				if res.Next == "" {
					break
				}
				again, _ := r.DiscoverWith(nekte.DiscoverParams{}, capability.DiscoverOptions{Limit: limit, Cursor: cursor})
				if string(again) != string(out) {
					t.Fatal("the same cursor gave another page")
				}
				cursor = res.Next
				if pages > 20 {
					t.Fatal("no end")
				}
			}
			if strings.Join(got, " ") != ids(t, all) {
				t.Fatalf("pages %q, want %q", got, ids(t, all))
			}
		})
	}
	t.Run("page_size and max_page_size", func(t *testing.T) {
		r := catalog(t, capability.Config{Discover: capability.DiscoverConfig{PageSize: 3, MaxPageSize: 4}})
		out, _ := r.Discover(nekte.DiscoverParams{})
		if got := ids(t, out); got != "echo getTinyImage get_data" || !strings.Contains(string(out), "next_cursor") {
			t.Fatalf("page_size page %s", out)
		}
		out, _ = r.DiscoverWith(nekte.DiscoverParams{}, capability.DiscoverOptions{Limit: 100})
		if got := ids(t, out); got != "echo getTinyImage get_data list_directory" {
			t.Fatalf("limit capped: %s", got)
		}
	})
	t.Run("ranked pages", func(t *testing.T) {
		f := &nekte.DiscoverFilter{Query: "numbers file"}
		full, _ := r.Discover(nekte.DiscoverParams{Filter: f})
		first, _ := r.DiscoverWith(nekte.DiscoverParams{Filter: f}, capability.DiscoverOptions{Limit: 2})
		var res struct {
			Next string `json:"next_cursor"`
		}
		_ = json.Unmarshal(first, &res)
		rest, err := r.DiscoverWith(nekte.DiscoverParams{Level: 1, Filter: f}, capability.DiscoverOptions{Cursor: res.Next})
		if err != nil || ids(t, first)+" "+ids(t, rest) != ids(t, full) {
			t.Fatalf("%s + %s != %s (%v)", ids(t, first), ids(t, rest), ids(t, full), err)
		}
	})
}

func TestDiscoverCursorErrors(t *testing.T) {
	r := catalog(t, capability.Config{})
	first, _ := r.DiscoverWith(nekte.DiscoverParams{}, capability.DiscoverOptions{Limit: 2})
	var res struct {
		Next string `json:"next_cursor"`
	}
	_ = json.Unmarshal(first, &res)
	tests := []struct {
		name   string
		change func()
		params nekte.DiscoverParams
		cursor string
		reason string
	}{
		{"garbage", nil, nekte.DiscoverParams{}, "not-a-cursor!", "is not a cursor"},
		{"forged", nil, nekte.DiscoverParams{}, "YzF8eHh4fDF8Mg", "is not a cursor"},
		{"other filter", nil, nekte.DiscoverParams{Filter: &nekte.DiscoverFilter{Category: "demo"}}, res.Next, "another filter"},
		{"too long", nil, nekte.DiscoverParams{}, strings.Repeat("a", 200), "is not a cursor"},
		{"catalog changed", func() { r.Update([]capability.Capability{tool("only", "", "")}) }, nekte.DiscoverParams{}, res.Next, "is stale"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.change != nil {
				tt.change()
			}
			_, err := r.DiscoverWith(tt.params, capability.DiscoverOptions{Cursor: tt.cursor})
			d := dataOf(err)
			if codeOf(err) != schemas.CodeInvalidParams || d["field"] != "cursor" || !strings.Contains(fmt.Sprint(d["reason"]), tt.reason) {
				t.Fatalf("got %v %v", err, d)
			}
			if tt.change != nil && d["recovery_hint"] != "RESTART_DISCOVERY" {
				t.Fatalf("no recovery hint: %v", d)
			}
		})
	}
}

func TestDiscoverCompactShape(t *testing.T) {
	r := catalog(t, capability.Config{})
	out, err := r.DiscoverWith(nekte.DiscoverParams{}, capability.DiscoverOptions{Shape: capability.ShapeCompact})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"agent":"gatehouse","v":"` + r.Version() + `","shape":"compact","caps":{"up":["echo","getTinyImage","list_directory","read_file"],` +
		`"demo":["get_data","notify_hello","subtract","sum","update"]}}`
	if string(out) != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	out, _ = r.DiscoverWith(nekte.DiscoverParams{Filter: &nekte.DiscoverFilter{Query: "numbers"}},
		capability.DiscoverOptions{Shape: capability.ShapeCompact, Limit: 2})
	if !strings.Contains(string(out), `"caps":{"demo":["update","notify_hello"]},"next_cursor":`) {
		t.Fatalf("ranked compact page %s", out)
	}
	_, err = r.DiscoverWith(nekte.DiscoverParams{Level: 1}, capability.DiscoverOptions{Shape: capability.ShapeCompact})
	if codeOf(err) != schemas.CodeInvalidParams || dataOf(err)["field"] != "shape" {
		t.Fatalf("compact at L1: %v", err)
	}
}

func TestDecodeDiscover(t *testing.T) {
	tests := []struct {
		raw   string
		want  string // "level/cursor/limit/shape/query" or the failing field
		field string
	}{
		{`{"level":1,"filter":{"query":"q"},"cursor":"c","limit":5,"shape":"compact"}`, "1/c/5/compact/q", ""},
		{``, "0//0//", ""},
		{`{"level":0,"Cursor":"c"}`, "", "cursor"},
		{`{"level":0,"Level":1}`, "", "level"},
		{`{"level":0,"filter":{"Query":"x"}}`, "", "filter.query"},
		{`{"level":0,"limit":-1}`, "", "limit"},
		{`{"level":0,"shape":"tiny"}`, "", "shape"},
		{`{"level":3}`, "", "level"},
		{`{"level":0,"limit":"5"}`, "", "limit"},
		{`{"level":0,"limit":1,"limit":2}`, "", "(params)"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			p, o, err := capability.DecodeDiscover([]byte(tt.raw))
			if tt.field != "" {
				pe, ok := errors.AsType[*nekte.ParamError](err)
				if !ok || pe.Field != strings.TrimSuffix(tt.field, "(params)") {
					t.Fatalf("got %v, want an error on %s", err, tt.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			q := ""
			if p.Filter != nil {
				q = p.Filter.Query
			}
			if got := fmt.Sprintf("%d/%s/%d/%s/%s", p.Level, o.Cursor, o.Limit, o.Shape, q); got != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestDiscoverInvalidParams(t *testing.T) {
	r := catalog(t, capability.Config{})
	tests := []struct {
		p     nekte.DiscoverParams
		o     capability.DiscoverOptions
		field string
	}{
		{nekte.DiscoverParams{Level: 3}, capability.DiscoverOptions{}, "level"},
		{nekte.DiscoverParams{Filter: &nekte.DiscoverFilter{Threshold: 2}}, capability.DiscoverOptions{}, "filter.threshold"},
		{nekte.DiscoverParams{}, capability.DiscoverOptions{Limit: -1}, "limit"},
		{nekte.DiscoverParams{}, capability.DiscoverOptions{Shape: "x"}, "shape"},
	}
	for _, tt := range tests {
		_, err := r.DiscoverWith(tt.p, tt.o)
		if codeOf(err) != schemas.CodeInvalidParams || dataOf(err)["field"] != tt.field {
			t.Errorf("%+v %+v: %v %v", tt.p, tt.o, err, dataOf(err))
		}
	}
}

func FuzzDecodeDiscover(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	for _, c := range fuzzseed.Calls(f, fuzzseed.NEKTERequest) {
		if c.Method == "nekte.discover" && c.Params != nil {
			f.Add(c.Params)
		}
	}
	for _, s := range []string{`{"level":1,"filter":{"query":"q","top_k":2},"cursor":"YzF8","limit":5,"shape":"compact"}`,
		`{"level":0}`, `{"Limit":1}`, `[]`, `null`, `{"cursor":"` + strings.Repeat("A", 130) + `"}`} {
		f.Add([]byte(s))
	}
	r := newRegistry(f, capability.Config{}, demo.NewSpec(routing.DemoConfig{}).Capabilities()...)
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, o, err := capability.DecodeDiscover(raw)
		if err != nil {
			if _, ok := errors.AsType[*nekte.ParamError](err); !ok {
				t.Fatalf("error %T %v", err, err)
			}
			return
		}
		out, err := r.DiscoverWith(p, o)
		if err != nil {
			if codeOf(err) != schemas.CodeInvalidParams {
				t.Fatalf("discover error %v", err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON %s", out)
		}
	})
}
