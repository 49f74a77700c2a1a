package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// TestShippedConfigsEnforce: every configuration the repository ships — the embedded default,
// the examples, the compose/Kubernetes file and the Helm chart's values — validates, and
// `gatehouse validate` reports breakers, admission control and retries on.
func TestShippedConfigsEnforce(t *testing.T) {
	t.Setenv("GATEHOUSE_MCP_SESSION_KEY", strings.Repeat("k", 48))
	helm := helmConfig(t)
	for _, file := range []string{
		"../../configs/gatehouse.yaml",
		"../../configs/examples/secure.yaml",
		"../../configs/examples/redis.yaml",
		"../../deploy/gatehouse.yaml",
		helm,
	} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run([]string{"validate", "--config", file}, &stdout, &stderr); code != 0 {
				t.Fatalf("validate: exit %d: %s", code, stderr.String())
			}
			for _, want := range []string{"breakers: on", "admission: on (global adaptive", "retries: on"} {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("validate says\n%s\nwant %q", stdout.String(), want)
				}
			}
		})
	}
}

// TestValidateSaysWhatIsOff: a configuration without the sections says so, one line each.
func TestValidateSaysWhatIsOff(t *testing.T) {
	file := filepath.Join(t.TempDir(), "bare.yaml")
	if err := os.WriteFile(file, []byte("auth: {anonymous: {}}\nrouting: {demo: {}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"validate", "--config", file}, &stdout, &stderr); code != 0 {
		t.Fatalf("validate: exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"breakers: off", "admission: off", "retries: off"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("validate says\n%s\nwant %q", stdout.String(), want)
		}
	}
}

// helmConfig writes the Helm chart's default `config` value (what its ConfigMap renders as
// gatehouse.yaml) to a file and returns its path.
func helmConfig(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("../../deploy/helm/gatehouse/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Config map[string]any `yaml:"config"`
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(values.Config)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "helm-values.yaml")
	if err := os.WriteFile(file, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}
