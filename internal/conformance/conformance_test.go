package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/internal/conformance"
)

func TestParseExpected(t *testing.T) {
	tests := []struct {
		name, in string
		want     conformance.Expected
		err      string
	}{
		{"empty", "", conformance.Expected{}, ""},
		{"comments and blanks", "# header\n\n   # indented\n", conformance.Expected{}, ""},
		{"entries", "tools-call-sampling # needs a GET stream\nping   #  slow  \n",
			conformance.Expected{"tools-call-sampling": "needs a GET stream", "ping": "slow"}, ""},
		{"no reason", "ping\n", nil, "line 1: ping has no reason"},
		{"empty reason", "ping #   \n", nil, "line 1: ping has no reason"},
		{"two names", "ping pong # why\n", nil, `line 1: "ping pong" is not one scenario name`},
		{"twice", "ping # a\n\nping # b\n", nil, "line 3: ping is listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := conformance.ParseExpected(strings.NewReader(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil || !mapsEqual(got, tt.want) {
				t.Errorf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func mapsEqual(a, b conformance.Expected) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func readExpected(t *testing.T) conformance.Expected {
	t.Helper()
	raw, err := os.ReadFile("expected-failures.txt")
	if err != nil {
		t.Fatal(err)
	}
	expected, err := conformance.ParseExpected(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return expected
}

func TestExpectedFailuresFileParses(t *testing.T) { readExpected(t) }

// result builds a scenario result from check statuses.
func result(scenario string, statuses ...string) conformance.Result {
	r := conformance.Result{Scenario: scenario}
	for i, s := range statuses {
		r.Checks = append(r.Checks, conformance.Check{ID: scenario, Name: "Check" + string(rune('A'+i)), Status: s, ErrorMessage: "bad " + s})
	}
	return r
}

func TestResultPassed(t *testing.T) {
	tests := []struct {
		r    conformance.Result
		want bool
	}{
		{result("a", "SUCCESS"), true},
		{result("a", "SUCCESS", "INFO"), true},
		{result("a", "INFO"), true},
		{result("a", "SUCCESS", "WARNING"), false},
		{result("a", "SUCCESS", "FAILURE"), false},
		{result("a"), false},
	}
	for _, tt := range tests {
		if got := tt.r.Passed(); got != tt.want {
			t.Errorf("%v: Passed %v, want %v", tt.r.Checks, got, tt.want)
		}
	}
}

func TestCompare(t *testing.T) {
	known := []string{"a", "b", "c", "d", "e"}
	results := []conformance.Result{
		result("a", "SUCCESS"),
		result("b", "FAILURE"),
		result("c", "WARNING"),
		result("d", "SUCCESS"),
	}
	expected := conformance.Expected{"b": "known bug", "d": "was broken", "e": "not run this time", "zz": "no such scenario"}
	v := conformance.Compare(results, expected, known)
	check := func(what string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s %v, want %v", what, got, want)
		}
	}
	check("passed", v.Passed, []string{"a", "d"})
	check("failed", v.Failed, []string{"b", "c"})
	check("unexpected", v.Unexpected, []string{"c"})
	check("stale", v.Stale, []string{"d"})
	check("unknown", v.Unknown, []string{"zz"})
	if v.OK() {
		t.Error("OK with an unexpected failure, a stale and an unknown entry")
	}
	if v := conformance.Compare(results[:2], conformance.Expected{"b": "known bug"}, known); !v.OK() {
		t.Errorf("not OK: %+v", v)
	}
}

func TestWriteReport(t *testing.T) {
	results := []conformance.Result{
		result("ping", "SUCCESS"),
		result("tools-call-sampling", "FAILURE"),
		result("server-sse-polling", "INFO", "INFO"),
		result("tools-call-with-logging", "SUCCESS", "WARNING"),
		result("never-ran"),
	}
	expected := conformance.Expected{"tools-call-sampling": "needs a GET stream"}
	v := conformance.Compare(results, expected, []string{"ping", "tools-call-sampling", "server-sse-polling", "tools-call-with-logging", "never-ran"})
	var out bytes.Buffer
	if err := conformance.WriteReport(&out, results, expected, v); err != nil {
		t.Fatal(err)
	}
	// Columns are compared with their padding squeezed to one space.
	squeezed := regexp.MustCompile(` {2,}`).ReplaceAllString(out.String(), " ")
	for _, want := range []string{
		"\nping pass 1 ok \n",
		"\ntools-call-sampling FAIL 1 failed expected: needs a GET stream\n",
		"\nserver-sse-polling pass 2 info nothing to verify: INFO checks only\n",
		"\ntools-call-with-logging FAIL 1 ok, 1 warning WARNING CheckB: bad WARNING\n",
		"\nnever-ran FAIL none no checks: the scenario did not run or reported nothing\n",
		"\n2 passed, 3 failed\n",
		"\nunexpected failures: tools-call-with-logging, never-ran\n",
	} {
		if !strings.Contains(squeezed, want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// writeResult lays out a scenario result the way the suite's --output-dir does.
func writeResult(t *testing.T, dir, dirName string, checks string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, dirName), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, dirName, "checks.json"), []byte(checks), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestReadResults(t *testing.T) {
	dir := t.TempDir()
	writeResult(t, dir, "server-server-initialize-2026-11-22T05-34-52-682Z", `[{"id":"server-initialize","name":"ServerInitialize","status":"SUCCESS"}]`)
	writeResult(t, dir, "server-server-sse-polling-2026-11-22T05-34-53-356Z", `[{"id":"x","status":"INFO"},{"id":"y","status":"WARNING","errorMessage":"no priming event"}]`)
	if err := os.WriteFile(filepath.Join(dir, "suite.log"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := conformance.ReadResults(dir, []string{"server-initialize", "server-sse-polling", "ping"})
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"Scenario":"server-initialize","Checks":[{"id":"server-initialize","name":"ServerInitialize","description":"","status":"SUCCESS"}]},` +
		`{"Scenario":"server-sse-polling","Checks":[{"id":"x","name":"","description":"","status":"INFO"},{"id":"y","name":"","description":"","status":"WARNING","errorMessage":"no priming event"}]},` +
		`{"Scenario":"ping","Checks":null}]`
	if raw, _ := json.Marshal(got); string(raw) != want {
		t.Errorf("got %s\nwant %s", raw, want)
	}

	for name, layout := range map[string]func(dir string){
		"unknown scenario": func(dir string) {
			writeResult(t, dir, "server-other-2026-11-22T05-34-52-682Z", `[]`)
		},
		"two results": func(dir string) {
			writeResult(t, dir, "server-ping-2026-11-22T05-34-52-682Z", `[]`)
			writeResult(t, dir, "server-ping-2026-11-22T05-34-53-682Z", `[]`)
		},
		"bad status": func(dir string) {
			writeResult(t, dir, "server-ping-2026-11-22T05-34-52-682Z", `[{"id":"p","status":"MAYBE"}]`)
		},
		"bad json": func(dir string) {
			writeResult(t, dir, "server-ping-2026-11-22T05-34-52-682Z", `{`)
		},
	} {
		dir := t.TempDir()
		layout(dir)
		if _, err := conformance.ReadResults(dir, []string{"ping"}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestPinsMatchPackageJSON(t *testing.T) {
	raw, err := os.ReadFile("package.json")
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(raw, &pkg); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"@modelcontextprotocol/conformance": conformance.SuiteVersion, "node": conformance.NodeVersion}
	if len(pkg.Dependencies) != len(want) {
		t.Errorf("package.json dependencies %v, want %v", pkg.Dependencies, want)
	}
	for name, version := range want {
		if got := pkg.Dependencies[name]; got != version {
			t.Errorf("package.json pins %s %q, the harness %q", name, got, version)
		}
	}
}

// TestFixtureConformance runs the suite against the demo MCP fixture, when the pinned tools
// are installed (make conformance-tools; CONFORMANCE_TOOLS names another installation).
// Without them it skips, unless CONFORMANCE_REQUIRED is set.
func TestFixtureConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the conformance suite")
	}
	dir := os.Getenv("CONFORMANCE_TOOLS")
	if dir == "" {
		dir = filepath.Join("..", "..", conformance.DefaultToolsDir)
	}
	fixture, err := conformance.ServeFixture("127.0.0.1:0", demo.MCPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		closeCtx, cancelClose := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancelClose()
		if err := fixture.Close(closeCtx); err != nil {
			t.Error(err)
		}
	}()
	conformance.VerifyURL(t, dir, fixture.URL, "expected-failures.txt")
}

// FuzzParseExpected: whatever parses, written back one "scenario # reason" per line,
// parses to the same entries.
func FuzzParseExpected(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	// The expected-failures files the suite runs with.
	for _, b := range fuzzseed.Files(f, "internal/conformance/expected-failures*.txt") {
		f.Add(string(b))
	}
	f.Add("tools-call-sampling # needs a GET stream\n# comment\n\nping # slow # really\n")
	f.Add("a#b\r\nc #d")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := conformance.ParseExpected(strings.NewReader(in))
		if err != nil {
			return
		}
		var again strings.Builder
		for name, reason := range got {
			if name == "" || reason == "" || strings.ContainsAny(name, "#\n") {
				t.Fatalf("entry %q # %q from %q", name, reason, in)
			}
			again.WriteString(name + " # " + reason + "\n")
		}
		back, err := conformance.ParseExpected(strings.NewReader(again.String()))
		if err != nil || !mapsEqual(back, got) {
			t.Fatalf("%q parsed to %v; written back, to %v, %v", in, got, back, err)
		}
	})
}
