package promql_test

// The tests of this file check what deploy/ ships for operators: every file parses, the
// dashboard and the alert rules query only Gatehouse's agreed metrics, and the manifests
// and the compose file hold together.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/gatehouse-dev/gatehouse/internal/promql"
	"github.com/gatehouse-dev/gatehouse/server"
)

// root is the repository root; deploy is the directory the tests read.
const root = "../.."

var deploy = filepath.Join(root, "deploy")

// TestFilesParse: every JSON and YAML file under deploy/ decodes, every YAML document of it
// — but the Helm chart's templates, which are Go templates of YAML (helm lint and helm
// template check them: make helm-check, deploy/helm's tests).
func TestFilesParse(t *testing.T) {
	n := 0
	templates := filepath.Join(deploy, "helm", "gatehouse", "templates")
	err := filepath.WalkDir(deploy, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == templates {
				return filepath.SkipDir
			}
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		switch filepath.Ext(path) {
		case ".json":
			n++
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Errorf("%s: %v", path, err)
			}
		case ".yaml", ".yml":
			n++
			for i, doc := range strings.Split(string(b), "\n---\n") {
				var v any
				if err := yaml.Unmarshal([]byte(doc), &v); err != nil || v == nil {
					t.Errorf("%s, document %d: %v (empty: %v)", path, i+1, err, v == nil)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Errorf("only %d files checked", n)
	}
}

// TestExpressionsUseAgreedMetrics: every expression of the dashboard and the alert rules
// selects only agreed metric names, and every agreed metric is shown somewhere.
func TestExpressionsUseAgreedMetrics(t *testing.T) {
	exprs, err := promql.Expressions(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(exprs) < 30 {
		t.Fatalf("%d expressions", len(exprs))
	}
	used := map[string]bool{}
	for _, e := range exprs {
		names := promql.MetricNames(e.Raw)
		if len(names) == 0 {
			t.Errorf("%s %s: no metric in %q", e.File, e.Where, e.Raw)
		}
		for _, name := range names {
			used[strings.TrimSuffix(name, "_bucket")] = true
			if !promql.Known(name) {
				t.Errorf("%s %s: unknown metric %q in %q", e.File, e.Where, name, e.Raw)
			}
		}
		if strings.Contains(e.Query, "$") {
			t.Errorf("%s %s: query keeps a variable: %q", e.File, e.Where, e.Query)
		}
		if e.Alert && e.Query == e.Raw {
			t.Errorf("%s %s: no threshold to strip from %q", e.File, e.Where, e.Raw)
		}
	}
	all := slices.Concat(promql.Metrics.Counters, promql.Metrics.Gauges, promql.Metrics.Histograms)
	for _, m := range all {
		if !used[m] {
			t.Errorf("metric %s is on no panel and in no alert", m)
		}
	}
}

// TestDashboard: schema version, the datasource variable every panel and query uses,
// unique panel ids, a grid position and a title on every panel, queries on every non-row panel.
func TestDashboard(t *testing.T) {
	d, err := promql.ReadDashboard(filepath.Join(root, promql.Files.Dashboards, "gatehouse-overview.json"))
	if err != nil {
		t.Fatal(err)
	}
	if d.SchemaVersion < 39 || d.UID == "" || d.Title == "" {
		t.Errorf("schemaVersion %d, uid %q, title %q", d.SchemaVersion, d.UID, d.Title)
	}
	if len(d.Templating.List) == 0 || d.Templating.List[0].Name != "datasource" || d.Templating.List[0].Type != "datasource" ||
		d.Templating.List[0].Query != "prometheus" {
		t.Errorf("templating: %+v", d.Templating.List)
	}
	ids := map[int]bool{}
	cells := map[[2]int]string{} // grid cell → the panel on it
	wantDS := promql.Datasource{Type: "prometheus", UID: "${datasource}"}
	for _, p := range d.AllPanels() {
		if ids[p.ID] || p.ID == 0 {
			t.Errorf("panel %q: id %d repeated or zero", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.Title == "" || p.GridPos == nil || p.GridPos.W == 0 || p.GridPos.H == 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %d: title %q, gridPos %+v", p.ID, p.Title, p.GridPos)
			continue
		}
		for x := p.GridPos.X; x < p.GridPos.X+p.GridPos.W; x++ {
			for y := p.GridPos.Y; y < p.GridPos.Y+p.GridPos.H; y++ {
				if other, taken := cells[[2]int{x, y}]; taken {
					t.Errorf("panels %q and %q overlap at %d,%d", p.Title, other, x, y)
				}
				cells[[2]int{x, y}] = p.Title
			}
		}
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 || p.Datasource == nil || *p.Datasource != wantDS {
			t.Errorf("panel %q: %d targets, datasource %+v", p.Title, len(p.Targets), p.Datasource)
		}
		for _, tg := range p.Targets {
			if tg.Datasource == nil || *tg.Datasource != wantDS || tg.RefID == "" {
				t.Errorf("panel %q query %q: datasource %+v", p.Title, tg.RefID, tg.Datasource)
			}
		}
	}
}

// TestAlertRules: each rule is an alert with a name, a for, a severity, a summary and a
// description, and the names are unique; operations.md tells what to do about each.
func TestAlertRules(t *testing.T) {
	rf, err := promql.ReadRules(filepath.Join(root, promql.Files.Alerts))
	if err != nil {
		t.Fatal(err)
	}
	ops, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || seen[r.Alert] || r.For == "" {
				t.Errorf("rule %q: repeated, unnamed or without for", r.Alert)
			}
			seen[r.Alert] = true
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("%s: severity %q", r.Alert, s)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: annotations %v", r.Alert, r.Annotations)
			}
			if !strings.Contains(string(ops), "`"+r.Alert+"`") {
				t.Errorf("%s is not explained in docs/operations.md", r.Alert)
			}
		}
	}
	for _, want := range []string{"GatehouseDown", "GatehouseNoTraffic", "GatehouseHighErrorRatio", "GatehouseHighLatencyP99",
		"GatehouseCircuitBreakerOpen", "GatehouseSustainedShedding", "GatehouseMCPUpstreamRestarting", "GatehouseConfigReloadRefused"} {
		if !seen[want] {
			t.Errorf("no alert %s", want)
		}
	}
}

// TestPrometheusConfig: the gatehouse job scrapes /metrics and the rule file is loaded.
func TestPrometheusConfig(t *testing.T) {
	type scrapeConfig struct {
		JobName       string `yaml:"job_name"`
		MetricsPath   string `yaml:"metrics_path"`
		StaticConfigs []struct {
			Targets []string `yaml:"targets"`
		} `yaml:"static_configs"`
	}
	var cfg struct {
		RuleFiles     []string       `yaml:"rule_files"`
		ScrapeConfigs []scrapeConfig `yaml:"scrape_configs"`
	}
	readYAML(t, "prometheus/prometheus.yml", &cfg)
	if !slices.Contains(cfg.RuleFiles, "/etc/prometheus/alerts.yml") {
		t.Errorf("rule_files %v", cfg.RuleFiles)
	}
	i := slices.IndexFunc(cfg.ScrapeConfigs, func(s scrapeConfig) bool { return s.JobName == "gatehouse" })
	if i < 0 || cfg.ScrapeConfigs[i].MetricsPath != "/metrics" || len(cfg.ScrapeConfigs[i].StaticConfigs) == 0 ||
		!slices.Contains(cfg.ScrapeConfigs[i].StaticConfigs[0].Targets, "gatehouse:9901") {
		t.Errorf("scrape configs %+v", cfg.ScrapeConfigs)
	}
}

// TestGatehouseConfig: the stack's configuration is a valid Gatehouse configuration, and
// the ConfigMap carries it verbatim.
func TestGatehouseConfig(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deploy, "gatehouse.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := server.Parse("deploy/gatehouse.yaml", b)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Admin.Addr != "0.0.0.0:9901" || cfg.Server.Boundary.Addr != "0.0.0.0:8080" {
		t.Errorf("listeners %+v", cfg.Server)
	}
	var cm struct {
		Kind string            `yaml:"kind"`
		Data map[string]string `yaml:"data"`
	}
	readYAML(t, "k8s/configmap.yaml", &cm)
	if cm.Kind != "ConfigMap" || strings.TrimSpace(cm.Data["gatehouse.yaml"]) != strings.TrimSpace(string(b)) {
		t.Errorf("k8s/configmap.yaml does not carry deploy/gatehouse.yaml verbatim")
	}
}

// TestCompose: the four services, gatehouse built from deploy/Dockerfile with the stack's
// configuration, Jaeger v2 with OTLP gRPC on 4317, Prometheus and Grafana given the
// shipped files, every published port on loopback.
func TestCompose(t *testing.T) {
	var c struct {
		Services map[string]struct {
			Image string `yaml:"image"`
			Build struct {
				Context    string `yaml:"context"`
				Dockerfile string `yaml:"dockerfile"`
			} `yaml:"build"`
			Volumes []string `yaml:"volumes"`
			Ports   []string `yaml:"ports"`
		} `yaml:"services"`
	}
	readYAML(t, "compose.yaml", &c)
	gh := c.Services["gatehouse"]
	if gh.Build.Dockerfile != "deploy/Dockerfile" || gh.Build.Context != ".." {
		t.Errorf("gatehouse build %+v", gh.Build)
	}
	if _, err := os.Stat(filepath.Join(root, gh.Build.Dockerfile)); err != nil {
		t.Error(err)
	}
	if j := c.Services["jaeger"]; !regexp.MustCompile(`^jaegertracing/jaeger:2\.`).MatchString(j.Image) ||
		!slices.Contains(j.Ports, "127.0.0.1:4317:4317") {
		t.Errorf("jaeger %+v", j)
	}
	for name, s := range c.Services {
		for _, p := range s.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("%s publishes %s beyond loopback", name, p)
			}
		}
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if _, err := os.Stat(filepath.Join(deploy, src)); err != nil {
				t.Errorf("%s mounts %s: %v", name, src, err)
			}
		}
	}
	for _, name := range []string{"prometheus", "grafana"} {
		if len(c.Services[name].Volumes) == 0 {
			t.Errorf("%s is not given the shipped files", name)
		}
	}
}

// TestKubernetes: every manifest has apiVersion, kind and a name; the Deployment's pods
// are annotated for scraping on the admin port, probed on /readyz and /healthz, and mount
// the ConfigMap; kustomization.yaml lists every manifest.
func TestKubernetes(t *testing.T) {
	type object struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
	}
	var kz struct {
		Resources []string `yaml:"resources"`
	}
	readYAML(t, "k8s/kustomization.yaml", &kz)
	kinds := map[string]bool{}
	for _, f := range kz.Resources {
		b, err := os.ReadFile(filepath.Join(deploy, "k8s", f))
		if err != nil {
			t.Fatal(err)
		}
		for doc := range strings.SplitSeq(string(b), "\n---\n") {
			var o object
			if err := yaml.Unmarshal([]byte(doc), &o); err != nil || o.APIVersion == "" || o.Kind == "" || o.Metadata.Name == "" {
				t.Errorf("%s: %+v %v", f, o, err)
			}
			kinds[o.Kind] = true
		}
	}
	for _, k := range []string{"Deployment", "Service", "ConfigMap"} {
		if !kinds[k] {
			t.Errorf("no %s", k)
		}
	}
	var dep struct {
		Spec struct {
			Template struct {
				Metadata struct {
					Annotations map[string]string `yaml:"annotations"`
				} `yaml:"metadata"`
				Spec struct {
					Containers []struct {
						ReadinessProbe struct {
							HTTPGet struct {
								Path string `yaml:"path"`
							} `yaml:"httpGet"`
						} `yaml:"readinessProbe"`
						LivenessProbe struct {
							HTTPGet struct {
								Path string `yaml:"path"`
							} `yaml:"httpGet"`
						} `yaml:"livenessProbe"`
					} `yaml:"containers"`
					Volumes []struct {
						ConfigMap struct {
							Name string `yaml:"name"`
						} `yaml:"configMap"`
					} `yaml:"volumes"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	readYAML(t, "k8s/deployment.yaml", &dep)
	tpl := dep.Spec.Template
	if a := tpl.Metadata.Annotations; a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != "9901" || a["prometheus.io/path"] != "/metrics" {
		t.Errorf("annotations %v", a)
	}
	if len(tpl.Spec.Containers) != 1 || tpl.Spec.Containers[0].ReadinessProbe.HTTPGet.Path != "/readyz" ||
		tpl.Spec.Containers[0].LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("containers %+v", tpl.Spec.Containers)
	}
	if len(tpl.Spec.Volumes) != 1 || tpl.Spec.Volumes[0].ConfigMap.Name != "gatehouse" {
		t.Errorf("volumes %+v", tpl.Spec.Volumes)
	}
}

// readYAML decodes file, relative to deploy/, into v.
func readYAML(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deploy, file))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// TestExpressionsParse: Prometheus' own parser accepts every expression, as Query gives it
// (promtool check rules over a file of recording rules, one per expression). promtool comes
// with the Prometheus package `make test` installs: missing, the test fails under CI and
// skips elsewhere.
func TestExpressionsParse(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("promtool is not installed (make test installs the prometheus package): %v", err)
		}
		t.Skip("promtool is not installed")
	}
	exprs, err := promql.Expressions(root)
	if err != nil {
		t.Fatal(err)
	}
	rules := promql.RuleFile{Groups: []promql.RuleGroup{{Name: "shipped"}}}
	for i, e := range exprs {
		rules.Groups[0].Rules = append(rules.Groups[0].Rules, promql.Rule{Record: fmt.Sprintf("shipped:expr_%d", i), Expr: e.Query})
	}
	b, err := yaml.Marshal(rules)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "rules.yml")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", file).CombinedOutput(); err != nil {
		t.Errorf("promtool: %v\n%s", err, out)
	}
	if out, err := exec.Command(promtool, "check", "rules", filepath.Join(root, promql.Files.Alerts)).CombinedOutput(); err != nil {
		t.Errorf("promtool on the alert rules: %v\n%s", err, out)
	}
}
