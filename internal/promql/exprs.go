package promql

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
)

// Expr is one shipped PromQL expression.
type Expr struct {
	// File is the file it comes from, relative to the repository root.
	File string
	// Where names it inside the file: "panel <title> / <refId>" or "alert <name>".
	Where string
	// Raw is the expression as written, Grafana variables included.
	Raw string
	// Query is Raw ready for Prometheus' query API: Grafana's variables replaced
	// (Substitute) and, for an alert, without its final threshold comparison, so that it
	// returns data whether or not the alert would fire.
	Query string
	// Alert says it is an alert rule's expression.
	Alert bool
}

// Files are the shipped files holding expressions, relative to the repository root.
var Files = struct{ Dashboards, Alerts string }{
	Dashboards: "deploy/grafana/dashboards",
	Alerts:     "deploy/prometheus/alerts.yml",
}

// Expressions returns every expression of the dashboards and the alert rules under root,
// the repository root, in file order.
func Expressions(root string) ([]Expr, error) {
	dashboards, err := filepath.Glob(filepath.Join(root, Files.Dashboards, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(dashboards) == 0 {
		return nil, fmt.Errorf("no dashboards in %s", filepath.Join(root, Files.Dashboards))
	}
	var out []Expr
	for _, f := range dashboards {
		exprs, err := dashboardExprs(root, f)
		if err != nil {
			return nil, err
		}
		out = append(out, exprs...)
	}
	alerts, err := alertExprs(root)
	if err != nil {
		return nil, err
	}
	return append(out, alerts...), nil
}

// Dashboard is the part of a Grafana dashboard's JSON the expressions live in.
type Dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []Panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query string `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// Panel is a dashboard panel; a row holds its collapsed panels in Panels.
type Panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *Datasource `json:"datasource"`
	GridPos    *struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID      string      `json:"refId"`
		Expr       string      `json:"expr"`
		Datasource *Datasource `json:"datasource"`
	} `json:"targets"`
	Panels []Panel `json:"panels"`
}

// Datasource is a panel's or a query's datasource reference.
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// ReadDashboard decodes the dashboard in file.
func ReadDashboard(file string) (*Dashboard, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var d Dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return &d, nil
}

// AllPanels returns the dashboard's panels, those inside rows included.
func (d *Dashboard) AllPanels() []Panel {
	var out []Panel
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

func dashboardExprs(root, file string) ([]Expr, error) {
	d, err := ReadDashboard(file)
	if err != nil {
		return nil, err
	}
	rel, _ := filepath.Rel(root, file)
	var out []Expr
	for _, p := range d.AllPanels() {
		for _, t := range p.Targets {
			if t.Expr == "" {
				continue
			}
			out = append(out, Expr{File: filepath.ToSlash(rel), Where: "panel " + p.Title + " / " + t.RefID,
				Raw: t.Expr, Query: Substitute(t.Expr)})
		}
	}
	return out, nil
}

// RuleFile is a Prometheus rule file.
type RuleFile struct {
	Groups []RuleGroup `yaml:"groups"`
}

// RuleGroup is a group of a rule file.
type RuleGroup struct {
	Name  string `yaml:"name"`
	Rules []Rule `yaml:"rules"`
}

// Rule is one alerting or recording rule.
type Rule struct {
	Alert       string            `yaml:"alert,omitempty"`
	Record      string            `yaml:"record,omitempty"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

// ReadRules decodes the rule file in file, strictly.
func ReadRules(file string) (*RuleFile, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var rf RuleFile
	if err := yaml.UnmarshalWithOptions(b, &rf, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return &rf, nil
}

func alertExprs(root string) ([]Expr, error) {
	rf, err := ReadRules(filepath.Join(root, Files.Alerts))
	if err != nil {
		return nil, err
	}
	var out []Expr
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			name := r.Alert
			if name == "" {
				name = r.Record
			}
			out = append(out, Expr{File: Files.Alerts, Where: "alert " + name, Raw: r.Expr,
				Query: StripThreshold(Substitute(r.Expr)), Alert: r.Alert != ""})
		}
	}
	return out, nil
}

// grafanaVars are the values Substitute gives Grafana's built-in variables.
var grafanaVars = strings.NewReplacer(
	"$__rate_interval", "1m",
	"${__rate_interval}", "1m",
	"$__interval", "1m",
	"${__interval}", "1m",
	"$__range", "1h",
	"${__range}", "1h",
)

// Substitute replaces Grafana's interval and range variables with fixed durations (1m, 1h),
// making a dashboard query one Prometheus' API accepts.
func Substitute(expr string) string { return grafanaVars.Replace(expr) }

var threshold = regexp.MustCompile(`\s*(==|!=|>=|<=|>|<)\s*(bool\s+)?-?[0-9][0-9.e+-]*\s*$`)

// StripThreshold removes an expression's final comparison with a number ("… > 0.05").
func StripThreshold(expr string) string {
	return strings.TrimSpace(threshold.ReplaceAllString(expr, ""))
}

// Metrics are the agreed metric names of Gatehouse's /metrics, by type.
var Metrics = struct{ Counters, Gauges, Histograms []string }{
	Counters: []string{
		"protocol_requests_total", "protocol_errors_total", "gateway_transcoding_total",
		"gatehouse_admission_rejections_total", "gatehouse_rate_limit_rejections_total", "gatehouse_retries_total",
		"gatehouse_upstream_starts_total", "gatehouse_tokens_minted_total", "gatehouse_tokens_verified_total",
		"gatehouse_config_reloads_total",
	},
	Gauges: []string{
		"grpc_active_streams", "mcp_connected_servers", "circuit_breaker_state", "gatehouse_queue_depth",
		"gatehouse_admission_limit", "gatehouse_tasks", "gatehouse_approvals_pending",
	},
	Histograms: []string{
		"protocol_request_duration_seconds", "gateway_transcoding_duration_seconds", "mcp_tool_call_duration_seconds",
		"gatehouse_queue_wait_seconds",
	},
}

// PrometheusSeries are the series Prometheus makes itself that shipped expressions may use.
var PrometheusSeries = []string{"up"}

// Known reports whether a series name may appear in a shipped expression: an agreed
// counter or gauge, a histogram's _bucket, _sum or _count series, or one of
// PrometheusSeries.
func Known(name string) bool {
	if slices.Contains(Metrics.Counters, name) || slices.Contains(Metrics.Gauges, name) || slices.Contains(PrometheusSeries, name) {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && slices.Contains(Metrics.Histograms, base) {
			return true
		}
	}
	return false
}

var (
	quoted     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	braces     = regexp.MustCompile(`\{[^{}]*\}`)
	brackets   = regexp.MustCompile(`\[[^\[\]]*\]`)
	labelLists = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	variables  = regexp.MustCompile(`\$\{?\w+\}?`)
	identifier = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	keywords   = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "and", "or", "unless", "inf", "nan"}
)

// MetricNames returns the series names expr selects: every identifier that is not a
// function, keyword, label name, string, number or variable.
func MetricNames(expr string) []string {
	s := quoted.ReplaceAllString(expr, `""`)
	s = labelLists.ReplaceAllString(s, " ")
	s = braces.ReplaceAllString(s, " ")
	s = brackets.ReplaceAllString(s, " ")
	s = variables.ReplaceAllString(s, " ")
	var names []string
	for _, loc := range identifier.FindAllStringIndex(s, -1) {
		name := s[loc[0]:loc[1]]
		if loc[0] > 0 && (s[loc[0]-1] >= '0' && s[loc[0]-1] <= '9' || s[loc[0]-1] == '.') {
			continue // the exponent or unit of a number: 1e3, 5m
		}
		rest := strings.TrimLeft(s[loc[1]:], " \t\n")
		if strings.HasPrefix(rest, "(") || slices.Contains(keywords, strings.ToLower(name)) {
			continue
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}
