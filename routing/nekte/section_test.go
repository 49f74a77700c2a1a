package nekte_test

import (
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	rn "github.com/gatehouse-dev/gatehouse/routing/nekte"
)

// TestSectionMirrorsConfig checks that the nekte section has every key of Config (beside
// endpoint), with the same types, so nothing the service can be configured with is
// missing from the file.
func TestSectionMirrorsConfig(t *testing.T) {
	ours := map[string]reflect.Type{}
	for f := range reflect.TypeFor[rn.Section]().Fields() {
		ours[f.Tag.Get("yaml")] = f.Type
	}
	for f := range reflect.TypeFor[rn.Config]().Fields() {
		if ours[f.Tag.Get("yaml")] != f.Type {
			t.Errorf("nekte.Config.%s (yaml %q, %s) is not in Section with its type", f.Name, f.Tag.Get("yaml"), f.Type)
		}
	}
}

// TestSectionValidate: each problem is reported at the key it names, relative to the
// section; a problem naming no key is at the section itself ("").
func TestSectionValidate(t *testing.T) {
	tests := []struct {
		name  string
		s     rn.Section
		paths []string
	}{
		{"defaults", rn.Section{}, nil},
		{"endpoint", rn.Section{Endpoint: "https://agents.example.com/rpc"}, nil},
		{"endpoint not a URL", rn.Section{Endpoint: "/rpc"}, []string{"endpoint"}},
		{"endpoint without host", rn.Section{Endpoint: "https://"}, []string{"endpoint"}},
		{"default above max", rn.Section{Tasks: rn.TasksConfig{DefaultTimeout: 2 * time.Hour, MaxTimeout: time.Hour}}, []string{"tasks.default_timeout"}},
		{"negative", rn.Section{Tasks: rn.TasksConfig{MaxPerOwner: -1}}, []string{"tasks.max_per_owner"}},
		{"record too large", rn.Section{Tasks: rn.TasksConfig{MaxEventBytes: 600000}}, []string{""}},
		{"two at once", rn.Section{Endpoint: "ftp://x", Contexts: rn.ContextsConfig{MaxLocal: -1}}, []string{"endpoint", "contexts.max_local"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range tt.s.Validate() {
				got = append(got, p.Path)
			}
			if !slices.Equal(got, tt.paths) {
				t.Errorf("paths %q, want %q (%v)", got, tt.paths, tt.s.Validate())
			}
		})
	}
}

// TestSectionWithBaseDir: a relative receipts.key_file names a file beside the
// configuration; an absolute one or none is kept.
func TestSectionWithBaseDir(t *testing.T) {
	dir := t.TempDir()
	abs := filepath.Join(dir, "abs.pem")
	for in, want := range map[string]string{"keys/r.pem": filepath.Join(dir, "keys/r.pem"), abs: abs, "": ""} {
		s := rn.Section{Receipts: rn.ReceiptsConfig{KeyFile: in}}.WithBaseDir(dir)
		if s.Receipts.KeyFile != want {
			t.Errorf("key_file %q: got %q, want %q", in, s.Receipts.KeyFile, want)
		}
	}
}

// TestNeedsRestart: tasks, contexts and receipts are kept until restart; the catalog is
// not.
func TestNeedsRestart(t *testing.T) {
	base := rn.Config{}
	if base.NeedsRestart(rn.Config{}) {
		t.Error("equal configurations need a restart")
	}
	if !base.NeedsRestart(rn.Config{Tasks: rn.TasksConfig{MaxPerOwner: 3}}) {
		t.Error("a tasks change does not need a restart")
	}
	if !base.NeedsRestart(rn.Config{Receipts: rn.ReceiptsConfig{Issuer: "x"}}) {
		t.Error("a receipts change does not need a restart")
	}
}
