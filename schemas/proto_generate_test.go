package schemas_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// repoRoot is the module root seen from this package's directory, where go test runs.
const repoRoot = ".."

// protoTool is a code-generation tool that make/proto.mk installs: the stable name that
// buf.gen.yaml and this test use, and the versioned file the stable name must point at.
type protoTool struct {
	name    string // file name under .tmp/bin, e.g. "buf"
	version string // pinned version, e.g. "v1.75.0"
}

// pinnedProtoTools reads the pins from make/proto.mk (and, for protoc-gen-go, from go.mod,
// which proto.mk follows).
func pinnedProtoTools(t *testing.T) []protoTool {
	t.Helper()
	mk := readRepoFile(t, "make/proto.mk")
	gomod := readRepoFile(t, "go.mod")
	return []protoTool{
		{"buf", submatch(t, mk, `(?m)^BUF_VERSION\s*:=\s*(\S+)`)},
		{"protoc-gen-go", submatch(t, gomod, `(?m)^\s*google\.golang\.org/protobuf\s+(v\S+)`)},
		{"protoc-gen-go-grpc", submatch(t, mk, `(?m)^PROTOC_GEN_GO_GRPC_VERSION\s*:=\s*(\S+)`)},
	}
}

// requireProtoTools returns the path of buf once every tool is installed at its pinned
// version. Outside CI a missing or stale tool skips the test (developers may not have run
// `make proto-tools`); with CI set it fails, because the Makefile installs them before tests.
func requireProtoTools(t *testing.T) string {
	t.Helper()
	var problems []string
	for _, tool := range pinnedProtoTools(t) {
		link := filepath.Join(repoRoot, ".tmp", "bin", tool.name)
		want := tool.name + "-" + tool.version
		got, err := os.Readlink(link)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s: %v", link, err))
		case got != want:
			problems = append(problems, fmt.Sprintf("%s points at %s, want %s", link, got, want))
		default:
			if _, err := os.Stat(link); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", link, err))
			}
		}
	}
	if len(problems) > 0 {
		msg := "code-generation tools not installed at their pinned versions (run `make proto-tools`):\n  " +
			strings.Join(problems, "\n  ")
		if os.Getenv("CI") == "" {
			t.Skip(msg)
		}
		t.Fatal(msg)
	}
	abs, err := filepath.Abs(filepath.Join(repoRoot, ".tmp", "bin", "buf"))
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// TestGeneratedCodeIsCurrent regenerates schemas/gen into a temporary directory with the
// pinned tools and buf.gen.yaml, and fails if any file would differ from the committed code.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	buf := requireProtoTools(t)
	out := t.TempDir()
	cmd := exec.CommandContext(t.Context(), buf, "generate", "--template", "buf.gen.yaml", "--output", out)
	cmd.Dir = repoRoot
	if combined, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("buf generate: %v\n%s", err, combined)
	}
	committed := readTree(t, filepath.Join(repoRoot, "schemas", "gen"))
	fresh := readTree(t, filepath.Join(out, "schemas", "gen"))
	if len(fresh) == 0 {
		t.Fatal("buf generate wrote nothing under schemas/gen; check buf.gen.yaml")
	}
	for _, name := range sortedKeys(fresh) {
		old, ok := committed[name]
		switch {
		case !ok:
			t.Errorf("schemas/gen/%s is missing: run `make generate`", name)
		case !bytes.Equal(old, fresh[name]):
			t.Errorf("schemas/gen/%s is stale: run `make generate` (first difference: %s)", name, firstDiff(old, fresh[name]))
		}
	}
	for _, name := range sortedKeys(committed) {
		if _, ok := fresh[name]; !ok {
			t.Errorf("schemas/gen/%s is no longer generated: run `make generate` to remove it", name)
		}
	}
}

// readTree returns every regular file under dir, keyed by slash-separated relative path.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		files[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatalf("reading %s: %v", dir, err)
	}
	return files
}

// firstDiff describes the first line at which two files differ.
func firstDiff(old, fresh []byte) string {
	a, b := strings.Split(string(old), "\n"), strings.Split(string(fresh), "\n")
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("line %d: committed %q, generated %q", i+1, a[i], b[i])
		}
	}
	return fmt.Sprintf("committed has %d lines, generated %d", len(a), len(b))
}

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func submatch(t *testing.T, text, pattern string) string {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no match for %s", pattern)
	}
	return m[1]
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
