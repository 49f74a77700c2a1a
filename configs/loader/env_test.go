package loader_test

import (
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/configs/loader"
)

func TestInterpolation(t *testing.T) {
	vars := map[string]string{"PORT": "8080", "TOKEN": "abc", "PASSWORD": "1234", "EMPTY": ""}
	got, _, err := load(t, mustSchema(t), "env.yaml", readTestdata(t, "env.yaml"), vars)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	want := testRoot{
		Listen: listenConfig{Addr: "0.0.0.0", Port: 8080, Timeout: 30 * time.Second},
		Auth:   map[string]any{"token": "Bearer abc", "header": "${NOT_A_VAR} costs $5"},
		Labels: map[string]string{"password": "1234", "empty": "fallback", "price": "$5 and $HOME"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded\n got %+v\nwant %+v", got, want)
	}
}

func TestInterpolationErrors(t *testing.T) {
	_, _, err := load(t, mustSchema(t), "env_undefined.yaml", readTestdata(t, "env_undefined.yaml"),
		map[string]string{"PORT": "1"})
	want := []string{
		`env_undefined.yaml:3:15: environment variable HOST is not set (write ${HOST:-default} to give a default)`,
		`env_undefined.yaml:5:21: environment variable SECRET is not set (write ${SECRET:-default} to give a default)`,
		`env_undefined.yaml:7:8: invalid reference "${not-a-name}": want ${NAME} or ${NAME:-default}`,
		`env_undefined.yaml:8:9: unterminated "${": missing "}"`,
	}
	if got := errorStrings(t, err); !slices.Equal(got, want) {
		t.Errorf("errors\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
}

// TestInterpolationTyped checks that substitutions decode into typed fields, and that the
// schema's wish for a string wins over YAML's typing of the substituted text.
func TestInterpolationTyped(t *testing.T) {
	tests := []struct {
		name  string
		yaml  string
		vars  map[string]string
		check func(testRoot) bool
		want  string // the error, when the load must fail
	}{
		{"int", "listen:\n  port: ${P}\n", map[string]string{"P": "8080"},
			func(r testRoot) bool { return r.Listen.Port == 8080 }, ""},
		{"duration", "listen: {port: 1, timeout: '${T}'}", map[string]string{"T": "5s"},
			func(r testRoot) bool { return r.Listen.Timeout == 5*time.Second }, ""},
		{"duration unquoted", "listen:\n  port: 1\n  timeout: ${T}\n", map[string]string{"T": "1h2m"},
			func(r testRoot) bool { return r.Listen.Timeout == time.Hour+2*time.Minute }, ""},
		{"bool", "listen:\n  port: 1\n  tls: ${TLS}\n", map[string]string{"TLS": "true"},
			func(r testRoot) bool { return r.Listen.TLS }, ""},
		{"float", "batch:\n  tiers:\n    a: {rate: \"${R}\"}\n", map[string]string{"R": "0.25"},
			func(r testRoot) bool { return r.Batch.Tiers["a"].Rate == 0.25 }, ""},
		{"numeric secret stays text", "labels:\n  pin: ${PIN}\n  n: ${N}\n  b: ${B}\n",
			map[string]string{"PIN": "0042", "N": "12345", "B": "false"},
			func(r testRoot) bool {
				return r.Labels["pin"] == "0042" && r.Labels["n"] == "12345" && r.Labels["b"] == "false"
			}, ""},
		// An interface field gets the typed value, even where the schema takes it as text.
		{"numeric in anyOf string", "auth: ${A}", map[string]string{"A": "777"},
			func(r testRoot) bool { return r.Auth == uint64(777) }, ""},
		{"quoted is typed too", "listen: {port: \"${P}\"}", map[string]string{"P": "8080"},
			func(r testRoot) bool { return r.Listen.Port == 8080 }, ""},
		{"partly substituted is a string", "listen: {port: \"${P}0\"}", map[string]string{"P": "x"},
			nil, `x.yaml:1:16: listen.port: expected integer, got string`},
		{"non-canonical int is a string", "listen:\n  port: ${P}\n", map[string]string{"P": "0x1F"},
			nil, `x.yaml:2:9: listen.port: expected integer, got string`},
		{"empty is a string", "listen:\n  port: ${P:-}\n", nil,
			nil, `x.yaml:2:9: listen.port: expected integer, got string`},
		{"ip plain", "listen:\n  port: 1\n  ip: ${IP}\n", map[string]string{"IP": "10.1.2.3"},
			func(r testRoot) bool { return r.Listen.IP == netip.MustParseAddr("10.1.2.3") }, ""},
		{"ip quoted", "listen:\n  port: 1\n  ip: \"${IP}\"\n", map[string]string{"IP": "::1"},
			func(r testRoot) bool { return r.Listen.IP == netip.MustParseAddr("::1") }, ""},
		{"ip block", "listen:\n  port: 1\n  ip: >-\n    ${IP}\n", map[string]string{"IP": "10.9.9.9"},
			func(r testRoot) bool { return r.Listen.IP == netip.MustParseAddr("10.9.9.9") }, ""},
	}
	s := mustSchema(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := load(t, s, "x.yaml", []byte(tt.yaml), tt.vars)
			if tt.want != "" {
				if errs := errorStrings(t, err); !slices.Equal(errs, []string{tt.want}) {
					t.Errorf("errors\n got %q\nwant %q", errs, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			if !tt.check(got) {
				t.Errorf("decoded %+v", got)
			}
		})
	}
}

// TestInjection substitutes values that would change the document if they were pasted into
// its text: each must stay one scalar, add no key, and move no line.
func TestInjection(t *testing.T) {
	values := []string{
		"a\nb: c",
		"x: y",
		"{admin: true}",
		"[1, 2]",
		"} , injected: {",
		"\"quoted\" and 'single'",
		"# not a comment",
		"*alias",
		"&anchor value",
		"!!binary aGVsbG8=",
		"value\n---\nsecond: doc",
		"- item",
		"|\n  block",
		"tab\there",
		"${NESTED}",
		"$$",
		"\\n escaped \\\" backslashes \\",
		"trailing space ",
		"ünïcødé ✓",
		"",
	}
	const src = `labels:
  plain: ${V}
  double: "${V}"
  single: '${V}'
  block: |-
    ${V}
  flow: {a: "${V}"}
  end: fixed
bogus: 1
`
	s := mustSchema(t)
	for i, v := range values {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			doc, err := loader.Parse("x.yaml", []byte(src), env(map[string]string{"V": v, "NESTED": "boom"}))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var root testRoot
			err = doc.Decode(s, &root)
			// The one error is the one planted on line 9: the substitution moved nothing.
			wantErrs := []string{`x.yaml:9:1: unknown key "bogus"`, `x.yaml:7:3: labels.flow: expected string, got mapping`}
			slices.Sort(wantErrs)
			gotErrs := errorStrings(t, err)
			slices.Sort(gotErrs)
			if !slices.Equal(gotErrs, wantErrs) {
				t.Errorf("errors\n got %q\nwant %q", gotErrs, wantErrs)
			}
			var raw struct {
				Labels map[string]any `yaml:"labels"`
				Bogus  int            `yaml:"bogus"`
			}
			if err := doc.Decode(nil, &raw); err != nil {
				t.Fatalf("Decode without schema: %v", err)
			}
			want := map[string]any{
				"plain": v, "double": v, "single": v, "block": v,
				"flow": map[string]any{"a": v}, "end": "fixed",
			}
			if v == "" {
				want["plain"] = ""
			}
			if !reflect.DeepEqual(raw.Labels, want) {
				t.Errorf("labels\n got %#v\nwant %#v", raw.Labels, want)
			}
		})
	}
}

// TestInjectionIntoUnmarshaler checks values that reach a type with its own unmarshaler,
// which goccy feeds re-formatted YAML text.
func TestInjectionIntoUnmarshaler(t *testing.T) {
	for _, v := range []string{"10.0.0.1\nport: 99", "10.0.0.1 # c", "'10.0.0.1'"} {
		_, _, err := load(t, nil, "x.yaml", []byte("listen:\n  port: 1\n  ip: ${IP}\n"), map[string]string{"IP": v})
		errs := errorStrings(t, err)
		if len(errs) != 1 || !strings.HasPrefix(errs[0], "x.yaml:3:7: listen.ip: ParseAddr(") {
			t.Errorf("IP=%q: errors %q, want one ParseAddr error at 3:7", v, errs)
		}
	}
}
