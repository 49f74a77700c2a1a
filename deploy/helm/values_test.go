package helm_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/gatehouse-dev/gatehouse/schemas"
)

// docsPage is the page that describes every value of the chart.
var docsPage = filepath.Join("..", "..", "docs", "kubernetes.md")

// TestValuesSchemaKnowsEveryConfigSection keeps values.schema.json's list of configuration
// sections (config's property names) equal to the sections of schemas/config.schema.json.
func TestValuesSchemaKnowsEveryConfigSection(t *testing.T) {
	var chart struct {
		Properties struct {
			Config struct {
				PropertyNames struct {
					Enum []string `json:"enum"`
				} `json:"propertyNames"`
			} `json:"config"`
		} `json:"properties"`
	}
	data, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &chart); err != nil {
		t.Fatal(err)
	}
	var gateway struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(schemas.ConfigSchema, &gateway); err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(slices.Values(chart.Properties.Config.PropertyNames.Enum))
	want := slices.Sorted(maps.Keys(gateway.Properties))
	if !slices.Equal(got, want) {
		t.Errorf("values.schema.json config sections %q, want schemas/config.schema.json's %q", got, want)
	}
}

// TestDocsDescribeEveryValue checks that docs/kubernetes.md names every value of values.yaml
// (as `path.to.value`); the maps and lists users fill, and config, count as one value each.
func TestDocsDescribeEveryValue(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.UnmarshalWithOptions(data, &values, yaml.Strict()); err != nil {
		t.Fatal(err)
	}
	docs, err := os.ReadFile(docsPage)
	if err != nil {
		t.Fatal(err)
	}
	paths := valuePaths("", values)
	sort.Strings(paths)
	for _, p := range paths {
		if !strings.Contains(string(docs), "`"+p+"`") {
			t.Errorf("docs/kubernetes.md does not describe `%s`", p)
		}
	}
}

// valuePaths returns the dotted paths of the values under v: a non-empty map is walked,
// except config (one value: the configuration file); anything else is a value.
func valuePaths(prefix string, v map[string]any) []string {
	var paths []string
	for k, child := range v {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		if m, ok := child.(map[string]any); ok && len(m) > 0 && p != "config" {
			paths = append(paths, valuePaths(p, m)...)
			continue
		}
		paths = append(paths, p)
	}
	return paths
}
