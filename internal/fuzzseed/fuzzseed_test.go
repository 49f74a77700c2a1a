package fuzzseed

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEveryKindHasFrames: each kind has frames, JSON kinds are mostly valid JSON (the goldens
// keep some refused input on purpose), and the corpus stays small.
func TestEveryKindHasFrames(t *testing.T) {
	total := 0
	for _, k := range Kinds {
		frames := allFrames(t, k)
		valid, size := 0, 0
		for _, f := range frames {
			size += len(f)
			if json.Valid(f) {
				valid++
			}
		}
		total += size
		t.Logf("%-17s %4d frames, %3d valid JSON, %6d bytes", k, len(frames), valid, size)
		if k != SSE && valid*2 < len(frames) {
			t.Errorf("%s: only %d of %d frames are JSON: is a section misclassified?", k, valid, len(frames))
		}
		if k == SSE {
			for _, f := range frames {
				if !bytes.Contains(f, []byte("data:")) {
					t.Errorf("SSE frame without a data line: %q", f)
				}
			}
		}
	}
	t.Logf("%d bytes of frames", total)
	if total > 512<<10 {
		t.Errorf("the seed corpus has grown to %d bytes: keep it small (maxFrame, the recorder's perGroup)", total)
	}
}

// TestEveryGoldenDirectoryIsClassified: a new directory of golden txtar files must be given
// its kinds (or said not to hold frames) in goldens, or its frames would never seed a target.
func TestEveryGoldenDirectoryIsClassified(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".txtar") || !strings.Contains(filepath.ToSlash(p), "/testdata/") {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		n++
		if !Classified(filepath.ToSlash(rel)) {
			t.Errorf("%s: its directory is not in fuzzseed's goldens: give its sections a kind", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d txtar files in testdata directories, %d read", n, len(GoldenFiles(t)))
}

// TestSampling: a call returns at most DefaultMaxSeeds seeds, every kind asked for among
// them; FUZZSEED_MAX=0 returns every frame.
func TestSampling(t *testing.T) {
	kinds := []Kind{NEKTEResponse, AgentRequest, SSE}
	got := Frames(t, kinds...)
	if len(got) != DefaultMaxSeeds {
		t.Fatalf("Frames returned %d seeds, want %d", len(got), DefaultMaxSeeds)
	}
	for _, k := range kinds {
		if !slices.ContainsFunc(got, func(f []byte) bool { return bytes.Equal(f, allFrames(t, k)[0]) }) {
			t.Errorf("no frame of %s among the seeds", k)
		}
	}
	if n := len(Strings(t, 1<<10, Kinds...)); n != DefaultMaxSeeds {
		t.Errorf("Strings returned %d seeds, want %d", n, DefaultMaxSeeds)
	}
	t.Setenv("FUZZSEED_MAX", "0")
	want := 0
	for _, k := range kinds {
		want += len(allFrames(t, k))
	}
	if n := len(Frames(t, kinds...)); n != want {
		t.Errorf("FUZZSEED_MAX=0: Frames returned %d seeds, want all %d", n, want)
	}
}

func TestSplitFrames(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"one document", "{\"a\":\n 1}\n", []string{"{\"a\":\n 1}"}},
		{"lines", "{\"a\":1}\n{\"b\":2}\n", []string{`{"a":1}`, `{"b":2}`}},
		{"not JSON", "{\"a\":\n", []string{`{"a":`}},
		{"empty", "\n \n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, f := range splitFrames([]byte(tc.in)) {
				got = append(got, string(f))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("splitFrames(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestTxtarRoundTrip(t *testing.T) {
	in := []Section{{"1 mcp.request", []byte("{}\n")}, {"2 sse", []byte("data: x\n\n")}, {"empty", nil}}
	got := ParseTxtar(FormatTxtar("a comment\n-- not a marker", in))
	if len(got) != len(in) {
		t.Fatalf("%d sections, want %d", len(got), len(in))
	}
	for i := range in {
		if got[i].Name != in[i].Name || !bytes.Equal(got[i].Data, in[i].Data) {
			t.Errorf("section %d = %q %q, want %q %q", i, got[i].Name, got[i].Data, in[i].Name, in[i].Data)
		}
	}
}

func TestDropHeaders(t *testing.T) {
	got := string(dropHeaders([]byte("A2A-Version: 1.0\nX-Other: y\n{\"a\":1}\n")))
	if got != "{\"a\":1}\n" {
		t.Errorf("dropHeaders = %q", got)
	}
}

// TestNoOrphanedCrashers: every testdata/fuzz/NAME directory of the module names a fuzz
// target of its own package. Go replays testdata/fuzz/FuzzX/* as regression cases in every
// plain `go test`, but only while FuzzX exists: a renamed or removed target leaves its
// crashers unreplayed, silently.
func TestNoOrphanedCrashers(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	dirs, files := 0, 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") && p != root {
			return filepath.SkipDir
		}
		if d.Name() != "fuzz" || filepath.Base(filepath.Dir(p)) != "testdata" {
			return nil
		}
		pkg := filepath.Dir(filepath.Dir(p))
		targets, err := fuzzTargets(pkg)
		if err != nil {
			return err
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return err
		}
		for _, e := range entries {
			rel, _ := filepath.Rel(root, filepath.Join(p, e.Name()))
			if !e.IsDir() {
				t.Errorf("%s: a file directly in testdata/fuzz; inputs belong in testdata/fuzz/FuzzTARGET/", rel)
				continue
			}
			dirs++
			inputs, _ := os.ReadDir(filepath.Join(p, e.Name()))
			files += len(inputs)
			if !targets[e.Name()] {
				t.Errorf("%s: no fuzz target %s in its package: rename the directory with the target or delete it", rel, e.Name())
			}
		}
		return filepath.SkipDir
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d testdata/fuzz target directories, %d kept inputs", dirs, files)
	if dirs == 0 {
		t.Fatal("found no testdata/fuzz directory: is the walk broken?")
	}
}

// fuzzTargets returns the names of the fuzz targets declared in the _test.go files of dir.
func fuzzTargets(dir string) (map[string]bool, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, n := range names {
		f, err := parser.ParseFile(fset, n, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Fuzz") {
				out[fn.Name.Name] = true
			}
		}
	}
	return out, nil
}
