package loader_test

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/configs/loader"
)

// testSchema describes testRoot: a tiny stand-in for the gateway's real schema.
const testSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "listen": {
      "type": "object",
      "additionalProperties": false,
      "required": ["port"],
      "properties": {
        "addr":    {"type": "string"},
        "port":    {"type": "integer", "minimum": 1, "maximum": 65535},
        "timeout": {"type": "string", "pattern": "^([0-9]+(\\.[0-9]+)?(ns|us|ms|s|m|h))+$"},
        "tls":     {"type": "boolean"},
        "ip":      {"type": "string"}
      }
    },
    "batch": {
      "type": "object",
      "additionalProperties": false,
      "properties": {
        "default": {"type": "integer", "minimum": 1},
        "max":     {"type": "integer", "minimum": 1},
        "tiers": {
          "type": "object",
          "additionalProperties": {
            "type": "object",
            "additionalProperties": false,
            "properties": {
              "rate":  {"type": "number", "exclusiveMinimum": 0},
              "burst": {"type": "integer"}
            }
          }
        }
      }
    },
    "routes": {
      "type": "array",
      "items": {
        "type": "object",
        "additionalProperties": false,
        "required": ["path"],
        "properties": {
          "path":   {"type": "string", "minLength": 1},
          "method": {"enum": ["GET", "POST", "PUT", "DELETE"]},
          "target": {"type": "string"}
        }
      }
    },
    "auth": {
      "anyOf": [
        {"type": "string"},
        {
          "type": "object",
          "additionalProperties": false,
          "properties": {
            "token":  {"type": "string"},
            "mode":   {"enum": ["bearer", "basic"]},
            "header": {"type": "string"}
          }
        }
      ]
    },
    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    "extra": {}
  }
}`

type testRoot struct {
	Listen listenConfig      `yaml:"listen"`
	Batch  batchConfig       `yaml:"batch"`
	Routes []routeConfig     `yaml:"routes"`
	Auth   any               `yaml:"auth"`
	Labels map[string]string `yaml:"labels"`
	Extra  any               `yaml:"extra"`
}

type listenConfig struct {
	Addr    string        `yaml:"addr"`
	Port    int           `yaml:"port"`
	Timeout time.Duration `yaml:"timeout"`
	TLS     bool          `yaml:"tls"`
	IP      netip.Addr    `yaml:"ip"`
}

type batchConfig struct {
	Default int                   `yaml:"default"`
	Max     int                   `yaml:"max"`
	Tiers   map[string]tierConfig `yaml:"tiers"`
}

type tierConfig struct {
	Rate  float64 `yaml:"rate"`
	Burst int     `yaml:"burst"`
}

type routeConfig struct {
	Path   string `yaml:"path"`
	Method string `yaml:"method"`
	Target string `yaml:"target"`
}

func mustSchema(t testing.TB) *loader.Schema {
	t.Helper()
	s, err := loader.CompileSchema([]byte(testSchema))
	if err != nil {
		t.Fatalf("CompileSchema: %v", err)
	}
	return s
}

// env returns a lookup function over a fixed set of variables.
func env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// load parses and decodes data the way the server does.
func load(t testing.TB, s *loader.Schema, file string, data []byte, vars map[string]string) (testRoot, *loader.Document, error) {
	t.Helper()
	var root testRoot
	doc, err := loader.Parse(file, data, env(vars))
	if err != nil {
		return root, nil, err
	}
	return root, doc, doc.Decode(s, &root)
}

// errorStrings returns the errors of err, which must be an ErrorList, one string each.
func errorStrings(t testing.TB, err error) []string {
	t.Helper()
	var list loader.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error %v (%T) is not a loader.ErrorList", err, err)
	}
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = e.Error()
	}
	return out
}
