package helm_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/configs/loader"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/server"
)

const (
	// configKey is the ConfigMap key the container reads as /etc/gatehouse/gatehouse.yaml.
	configKey = "gatehouse.yaml"
	// imageBinary is where deploy/Dockerfile puts the binary: `gatehouse validate` and
	// `serve` set GATEHOUSE_BIN to it before loading the file.
	imageBinary = "/usr/local/bin/gatehouse"
)

// varRef matches a ${NAME} or ${NAME:-default} reference of the configuration.
var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}`)

// renderedConfig returns the configuration file the Deployment mounts: the gatehouse.yaml key
// of the ConfigMap its config volume names.
func renderedConfig(t *testing.T, m manifests, pod podSpec) string {
	t.Helper()
	for _, v := range pod.Volumes {
		if v.Name == "config" && v.ConfigMap != nil {
			data, ok := m.get(t, "ConfigMap", v.ConfigMap.Name).Data[configKey]
			if !ok {
				t.Fatalf("ConfigMap %s has no key %s", v.ConfigMap.Name, configKey)
			}
			return data
		}
	}
	t.Fatal("the pod has no config volume from a ConfigMap")
	return ""
}

// containerEnv returns the environment the container gets: plain values as they are, keys of
// a Secret the chart renders with the Secret's value, any other reference (a Secret managed
// outside the chart, a field) as a placeholder, and for an envFrom Secret the variables in
// existingKeys, as placeholders.
func containerEnv(t *testing.T, m manifests, c container, existingKeys []string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			if s, ok := m["Secret"][ref.Name]; ok {
				enc, ok := s.Data[ref.Key]
				if !ok {
					t.Fatalf("env %s: Secret %s has no key %s", e.Name, ref.Name, ref.Key)
				}
				val, err := base64.StdEncoding.DecodeString(enc)
				if err != nil {
					t.Fatalf("Secret %s key %s: %v", ref.Name, ref.Key, err)
				}
				env[e.Name] = string(val)
				continue
			}
			env[e.Name] = placeholder(e.Name)
		default:
			env[e.Name] = placeholder(e.Name)
		}
	}
	if len(c.EnvFrom) > 0 {
		for _, k := range existingKeys {
			env[k] = placeholder(k)
		}
	}
	return env
}

// placeholder stands for a secret's value the test cannot know; it is long enough for every
// key length the configuration checks (mcp_face.session_key: 32 bytes).
func placeholder(name string) string {
	return "placeholder-for-" + name + "-0123456789abcdef0123456789abcdef"
}

// loadLikeValidate loads text as `gatehouse validate --config FILE` does (server.Load, with
// GATEHOUSE_BIN set to the image's binary) in an environment holding env and none of the
// other variables text refers to. It restores the environment when the test ends.
func loadLikeValidate(t *testing.T, text string, env map[string]string) (*server.Config, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), configKey)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GATEHOUSE_BIN", imageBinary)
	for _, ref := range varRef.FindAllStringSubmatch(text, -1) {
		if _, set := env[ref[1]]; !set && ref[1] != "GATEHOUSE_BIN" {
			t.Setenv(ref[1], "") // restored at the end of the test
			if err := os.Unsetenv(ref[1]); err != nil {
				t.Fatal(err)
			}
		}
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	return server.Load(path)
}

// redisInSchema reports whether this build's configuration schema knows state.backend redis
// (the Redis state store arrives with scale-out).
func redisInSchema(t *testing.T) bool {
	t.Helper()
	var s struct {
		Properties struct {
			State struct {
				Properties struct {
					Backend struct {
						Enum []string `json:"enum"`
					} `json:"backend"`
				} `json:"properties"`
			} `json:"state"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(schemas.ConfigSchema, &s); err != nil {
		t.Fatal(err)
	}
	return slices.Contains(s.Properties.State.Properties.Backend.Enum, "redis")
}

// onlyStateErrors reports whether err is a configuration error list whose every entry is
// under the state section.
func onlyStateErrors(err error) bool {
	var list loader.ErrorList
	if !errors.As(err, &list) || len(list) == 0 {
		return false
	}
	for _, e := range list {
		if e.Path != "state" && !strings.HasPrefix(e.Path, "state.") {
			return false
		}
	}
	return true
}
