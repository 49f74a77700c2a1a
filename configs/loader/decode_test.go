package loader_test

import (
	"net/netip"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/configs/loader"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestDecodeValid(t *testing.T) {
	got, _, err := load(t, mustSchema(t), "valid.yaml", readTestdata(t, "valid.yaml"), nil)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	want := testRoot{
		Listen: listenConfig{
			Addr: "0.0.0.0", Port: 8080, Timeout: 90 * time.Second, TLS: true,
			IP: netip.MustParseAddr("10.0.0.1"),
		},
		Batch: batchConfig{
			Default: 10, Max: 100,
			Tiers: map[string]tierConfig{
				"free":       {Rate: 0.5, Burst: 5},
				"enterprise": {Rate: 0.5, Burst: 50},
			},
		},
		Routes: []routeConfig{
			{Path: "/v1/users", Method: "GET", Target: "users"},
			{Path: "/v1/orders", Method: "POST", Target: "orders"},
		},
		Auth:   map[string]any{"token": "secret", "mode": "bearer"},
		Labels: map[string]string{"team": "core", "x.y": "dotted"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded\n got %+v\nwant %+v", got, want)
	}
}

// TestDecodeErrors checks that every problem of a file is reported, sorted, each with its
// file, line, column and path.
func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		file string
		want []string
	}{
		{"unknown_nested.yaml", []string{
			`unknown_nested.yaml:7:7: batch.tiers.enterprise: unknown key "burts" (did you mean "burst"?)`,
		}},
		{"many_errors.yaml", []string{
			`many_errors.yaml:3:9: listen.port: expected integer, got string`,
			`many_errors.yaml:4:3: listen: unknown key "bogus"`,
			`many_errors.yaml:5:3: listen: unknown key "timout" (did you mean "timeout"?)`,
			`many_errors.yaml:7:12: batch.default: must be at least 1`,
			`many_errors.yaml:8:8: batch.max: expected integer, got number`,
			`many_errors.yaml:10:5: routes[0]: missing required key "path"`,
			`many_errors.yaml:10:13: routes[0].method: must be one of "GET", "POST", "PUT", "DELETE"`,
			`many_errors.yaml:12:5: routes[1]: unknown key "nope"`,
			`many_errors.yaml:13:7: auth: expected string or mapping, got number`,
			`many_errors.yaml:15:3: labels.team: expected string, got list`,
			`many_errors.yaml:16:1: unknown key "zz"`,
		}},
		{"duplicate.yaml", []string{
			`duplicate.yaml:4:3: duplicate key "port" (first defined at line 2)`,
			`duplicate.yaml:7:5: duplicate key "path" (first defined at line 6)`,
		}},
		{"wrong_type.yaml", []string{
			`wrong_type.yaml:2:9: listen.port: expected integer, got string`,
			`wrong_type.yaml:3:8: listen.tls: expected boolean, got string`,
			`wrong_type.yaml:4:1: routes: expected list, got mapping`,
		}},
		{"syntax.yaml", []string{
			`syntax.yaml:4:1: ',' or ']' must be specified`,
		}},
	}
	s := mustSchema(t)
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, _, err := load(t, s, tt.file, readTestdata(t, tt.file), nil)
			if err == nil {
				t.Fatal("load succeeded, want errors")
			}
			if got := errorStrings(t, err); !slices.Equal(got, tt.want) {
				t.Errorf("errors\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(tt.want, "\n     "))
			}
		})
	}
}

// TestDecodeMessages checks the translation of the common kinds of schema violation.
func TestDecodeMessages(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"maximum", "listen: {port: 70000}", `x.yaml:1:16: listen.port: must be at most 65535`},
		{"exclusive minimum", "batch: {tiers: {free: {rate: 0}}}", `x.yaml:1:30: batch.tiers.free.rate: must be greater than 0`},
		{"min length", "routes: [{path: ''}]", `x.yaml:1:17: routes[0].path: must be at least 1 characters long`},
		{"pattern", "listen: {port: 1, timeout: 5 minutes}", `x.yaml:1:28: listen.timeout: must match the pattern "^([0-9]+(\\.[0-9]+)?(ns|us|ms|s|m|h))+$"`},
		{"required", "listen: {addr: x}", `x.yaml:1:1: listen: missing required key "port"`},
		{"anyOf long form", "auth: {mode: digest}", `x.yaml:1:14: auth.mode: must be one of "bearer", "basic"`},
		{"null section", "listen:\n", `x.yaml:1:1: listen: expected mapping, got null`},
	}
	s := mustSchema(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := load(t, s, "x.yaml", []byte(tt.yaml), nil)
			if err == nil {
				t.Fatal("load succeeded, want an error")
			}
			if got := errorStrings(t, err); !slices.Equal(got, []string{tt.want}) {
				t.Errorf("errors\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestDecodeWithoutSchema checks the strict decode alone, and that errors from unmarshalers,
// which goccy leaves without a position, are located.
func TestDecodeWithoutSchema(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown key", "listen:\n  port: 1\n  bogus: 2\n", `x.yaml:3:3: listen: unknown key "bogus"`},
		{"type", "listen:\n  port: [1]\n", `x.yaml:2:9: listen.port: expected int, got list`},
		{"duration", "listen:\n  port: 1\n  timeout: 5 seconds\n", `x.yaml:3:12: listen.timeout: time: unknown unit " seconds" in duration "5 seconds"`},
		{"duration in anchor", "batch: {max: 1}\nlisten: &l\n  timeout: 1q\n", `x.yaml:3:12: listen.timeout: time: unknown unit "q" in duration "1q"`},
		{"text unmarshaler", "routes: []\nlisten:\n  ip: 300.1.1.1\n", `x.yaml:3:7: listen.ip: ParseAddr("300.1.1.1"): IPv4 field has value >255`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := load(t, nil, "x.yaml", []byte(tt.yaml), nil)
			if err == nil {
				t.Fatal("load succeeded, want an error")
			}
			if got := errorStrings(t, err); !slices.Equal(got, []string{tt.want}) {
				t.Errorf("errors\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestDecodeEmpty checks that a file with no document decodes to the zero value, or leaves
// defaults alone.
func TestDecodeEmpty(t *testing.T) {
	s := mustSchema(t)
	for _, name := range []string{"empty.yaml", "comments.yaml"} {
		t.Run(name, func(t *testing.T) {
			got, _, err := load(t, s, name, readTestdata(t, name), nil)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			if !reflect.DeepEqual(got, testRoot{}) {
				t.Errorf("decoded %+v, want the zero value", got)
			}
		})
	}
	t.Run("defaults kept", func(t *testing.T) {
		doc, err := loader.Parse("x.yaml", []byte("batch:\n  max: 5\n"), env(nil))
		if err != nil {
			t.Fatal(err)
		}
		got := testRoot{Listen: listenConfig{Port: 80}, Batch: batchConfig{Default: 1, Max: 2}}
		if err := doc.Decode(s, &got); err != nil {
			t.Fatal(err)
		}
		if got.Listen.Port != 80 || got.Batch.Default != 1 || got.Batch.Max != 5 {
			t.Errorf("decoded %+v, want port 80, default 1, max 5", got)
		}
	})
}

func TestDecodeNeedsPointer(t *testing.T) {
	doc, err := loader.Parse("x.yaml", []byte("a: 1"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	var root testRoot
	for _, out := range []any{nil, root, (*testRoot)(nil)} {
		if err := doc.Decode(nil, out); err == nil {
			t.Errorf("Decode(%T) succeeded, want an error", out)
		}
	}
}

// TestDecodeConcurrent decodes one Document from many goroutines, under -race.
func TestDecodeConcurrent(t *testing.T) {
	s := mustSchema(t)
	doc, err := loader.Parse("x.yaml", []byte("listen:\n  port: ${PORT}\nlabels:\n  pin: ${PIN}\n"),
		env(map[string]string{"PORT": "8080", "PIN": "0042"}))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			var root testRoot
			if err := doc.Decode(s, &root); err != nil {
				t.Error(err)
				return
			}
			if root.Listen.Port != 8080 || root.Labels["pin"] != "0042" {
				t.Errorf("decoded %+v", root)
			}
		})
	}
	wg.Wait()
}

func BenchmarkLoad(b *testing.B) {
	s := mustSchema(b)
	data := readTestdata(b, "valid.yaml")
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := load(b, s, "valid.yaml", data, nil); err != nil {
			b.Fatal(err)
		}
	}
}
