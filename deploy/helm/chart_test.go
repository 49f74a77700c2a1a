package helm_test

import (
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/server"
)

// rendered is one render of the chart, with its Deployment's parts and the configuration
// loaded as the pod would load it (cfg is nil only where this build cannot load the Redis
// state section yet; see checkConfig).
type rendered struct {
	m          manifests
	dep        deploymentSpec
	c          container
	configText string
	env        map[string]string
	cfg        *server.Config
}

// chartCases are the values files the chart must render into a working deployment; make
// helm-check lints and renders the same files.
var chartCases = []struct {
	name   string
	values []string // files of testdata/
	// existingSecretKeys are the variables the Secret named by secret.existingSecret holds.
	existingSecretKeys []string
	check              func(t *testing.T, r rendered)
}{
	{name: "Defaults", check: checkDefaults},
	{name: "RedisWithSecret", values: []string{"redis.values.yaml"}, check: checkRedisWithSecret},
	{name: "RedisExistingSecret", values: []string{"redis-existing-secret.values.yaml"},
		existingSecretKeys: []string{"REDIS_PASSWORD"}, check: checkRedisExistingSecret},
	{name: "Autoscaling", values: []string{"hpa.values.yaml"}, check: checkAutoscaling},
	{name: "ServiceMonitor", values: []string{"servicemonitor.values.yaml"}, check: checkServiceMonitor},
}

func TestChartRenders(t *testing.T) {
	for _, tc := range chartCases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := helmTemplate(t, tc.values...)
			if err != nil {
				t.Fatal(err)
			}
			m, err := parseManifests(out)
			if err != nil {
				t.Fatalf("parsing the rendered manifests: %v", err)
			}
			r := inspect(t, m, tc.existingSecretKeys)
			tc.check(t, r)
		})
	}
}

func TestChartLints(t *testing.T) {
	for _, tc := range chartCases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"lint", "--strict", chartDir, "--kube-version", kubeVersion}, valuesArgs(tc.values)...)
			stdout, stderr, err := runHelmOutputs(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			// lint reports a template that fails to render as information only.
			if out := string(stdout) + string(stderr); strings.Contains(out, "Fail:") || strings.Contains(out, "[WARNING]") {
				t.Errorf("helm lint passed with a failure or a warning:\n%s", out)
			}
		})
	}
}

// TestChartRefusesBrokenValues checks that values that would deploy a gateway that cannot
// start are refused: by the chart (helm template fails) or by the gateway's own loading of
// the rendered configuration (what `gatehouse validate` and the pod's start do).
func TestChartRefusesBrokenValues(t *testing.T) {
	tests := []struct {
		file    string // under testdata/invalid
		byHelm  bool   // refused when rendering; otherwise by loading the configuration
		wantErr string
	}{
		{"unknown-config-key.values.yaml", false, "shutdown_grase"},
		{"unset-variable.values.yaml", false, "environment variable REDIS_PASSWORD is not set"},
		{"unknown-config-section.values.yaml", true, "rate_limit"},
		{"short-termination-grace.values.yaml", true, "terminationGracePeriodSeconds (30) must exceed preStopSleepSeconds + config.server.shutdown_grace (35 s)"},
		{"live-reload-without-watch.values.yaml", true, "reloadStrategy live needs config.server.watch_config true"},
	}
	files, err := filepath.Glob(filepath.Join("testdata", "invalid", "*.values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(tests) {
		t.Errorf("testdata/invalid holds %d values files, the table %d: give each file a case", len(files), len(tests))
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.file, ".values.yaml"), func(t *testing.T) {
			out, err := helmTemplate(t, filepath.Join("invalid", tt.file))
			if tt.byHelm {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("helm template: error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("helm template refused what the gateway should refuse: %v", err)
			}
			m, err := parseManifests(out)
			if err != nil {
				t.Fatal(err)
			}
			dep := deploymentOf(t, m)
			c := onlyContainer(t, dep)
			_, err = loadLikeValidate(t, renderedConfig(t, m, dep.Template.Spec), containerEnv(t, m, c, nil))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("loading the rendered configuration: error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestEveryValuesFileIsACase keeps the table above and make helm-check on the same files.
func TestEveryValuesFileIsACase(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var used []string
	for _, tc := range chartCases {
		used = append(used, tc.values...)
	}
	for _, f := range files {
		if !slices.Contains(used, filepath.Base(f)) {
			t.Errorf("%s is in no case of chartCases", f)
		}
	}
}

func deploymentOf(t *testing.T, m manifests) deploymentSpec {
	t.Helper()
	var dep deploymentSpec
	m.get(t, "Deployment", releaseName).spec(t, &dep)
	return dep
}

func onlyContainer(t *testing.T, dep deploymentSpec) container {
	t.Helper()
	if n := len(dep.Template.Spec.Containers); n != 1 {
		t.Fatalf("the pod has %d containers, want 1", n)
	}
	return dep.Template.Spec.Containers[0]
}

// inspect makes the checks every render must pass and loads its configuration.
func inspect(t *testing.T, m manifests, existingSecretKeys []string) rendered {
	t.Helper()
	r := rendered{m: m, dep: deploymentOf(t, m)}
	r.c = onlyContainer(t, r.dep)
	checkListeners(t, r.c)
	checkProbes(t, r.c)
	checkSecurity(t, r.dep.Template.Spec, r.c)
	checkServices(t, m, r.dep)
	checkDisruptionBudget(t, m, r.dep)
	r.configText = renderedConfig(t, m, r.dep.Template.Spec)
	r.env = containerEnv(t, m, r.c, existingSecretKeys)
	r.cfg = checkConfig(t, r)
	return r
}

// ports returns the container's ports by name.
func ports(c container) map[string]int {
	p := map[string]int{}
	for _, port := range c.Ports {
		p[port.Name] = port.ContainerPort
	}
	return p
}

// flag returns the value following name in args, "" when absent.
func flag(args []string, name string) string {
	if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// checkListeners checks that the container serves the mounted file and that every listener
// binds all the pod's interfaces on its named port (the gateway's defaults are loopback).
func checkListeners(t *testing.T, c container) {
	t.Helper()
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Errorf("args %q: want serve first", c.Args)
	}
	if got := flag(c.Args, "--config"); got != "/etc/gatehouse/"+configKey {
		t.Errorf("--config %q, want /etc/gatehouse/%s", got, configKey)
	}
	p := ports(c)
	for flagName, port := range map[string]string{"--boundary-addr": "boundary", "--admin-addr": "admin", "--internal-addr": "internal"} {
		got := flag(c.Args, flagName)
		if _, ok := p[port]; !ok {
			if got != "" || port != "internal" {
				t.Errorf("no container port %q for %s %q", port, flagName, got)
			}
			continue
		}
		if want := "0.0.0.0:" + strconv.Itoa(p[port]); got != want {
			t.Errorf("%s %q, want %q", flagName, got, want)
		}
	}
	var mounted bool
	for _, vm := range c.VolumeMounts {
		if vm.Name == "config" {
			mounted = vm.MountPath == "/etc/gatehouse" && vm.SubPath == ""
		}
	}
	if !mounted {
		t.Errorf("the config volume is not mounted whole at /etc/gatehouse (a subPath mount is never updated): %+v", c.VolumeMounts)
	}
}

func checkProbes(t *testing.T, c container) {
	t.Helper()
	for _, tt := range []struct {
		name string
		p    *probe
		path string
	}{
		{"startupProbe", c.StartupProbe, "/healthz"},
		{"livenessProbe", c.LivenessProbe, "/healthz"},
		{"readinessProbe", c.ReadinessProbe, "/readyz"},
	} {
		if tt.p == nil || tt.p.HTTPGet == nil {
			t.Errorf("%s: no httpGet probe", tt.name)
			continue
		}
		if tt.p.HTTPGet.Path != tt.path || tt.p.HTTPGet.Port != "admin" {
			t.Errorf("%s gets %s on port %v, want %s on admin", tt.name, tt.p.HTTPGet.Path, tt.p.HTTPGet.Port, tt.path)
		}
	}
	// /readyz bounds its own checks at 2s: a shorter probe timeout would fail a slow but
	// healthy answer.
	if c.ReadinessProbe != nil && c.ReadinessProbe.TimeoutSeconds <= 2 {
		t.Errorf("readinessProbe timeoutSeconds %d, want more than 2", c.ReadinessProbe.TimeoutSeconds)
	}
}

func checkSecurity(t *testing.T, pod podSpec, c container) {
	t.Helper()
	psc := pod.SecurityContext
	if psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("pod securityContext %+v: want runAsNonRoot and a non-zero runAsUser", psc)
	}
	sc := c.SecurityContext
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("container allows privilege escalation")
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("container root filesystem is writable")
	}
	if !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("container drops capabilities %q, want ALL", sc.Capabilities.Drop)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the pod mounts a service account token it does not need")
	}
}

// subset reports whether every label of sub is in set with the same value.
func subset(sub, set map[string]string) bool {
	for k, v := range sub {
		if set[k] != v {
			return false
		}
	}
	return len(sub) > 0
}

func checkServices(t *testing.T, m manifests, dep deploymentSpec) {
	t.Helper()
	if !subset(dep.Selector.MatchLabels, dep.Template.Metadata.Labels) {
		t.Errorf("selector %v does not select the pod's labels %v", dep.Selector.MatchLabels, dep.Template.Metadata.Labels)
	}
	m.get(t, "ServiceAccount", dep.Template.Spec.ServiceAccountName)
	for _, tt := range []struct {
		name, port, typ string
	}{
		{releaseName, "boundary", ""},
		{releaseName + "-admin", "admin", "ClusterIP"},
	} {
		var svc serviceSpec
		m.get(t, "Service", tt.name).spec(t, &svc)
		if !maps.Equal(svc.Selector, dep.Selector.MatchLabels) {
			t.Errorf("Service %s selects %v, want the Deployment's %v", tt.name, svc.Selector, dep.Selector.MatchLabels)
		}
		if tt.typ != "" && svc.Type != tt.typ {
			t.Errorf("Service %s is %s, want %s", tt.name, svc.Type, tt.typ)
		}
		i := slices.IndexFunc(svc.Ports, func(p servicePort) bool { return p.Name == tt.port })
		if i < 0 || svc.Ports[i].TargetPort != tt.port {
			t.Errorf("Service %s ports %+v: want %s targeting the container port %s", tt.name, svc.Ports, tt.port, tt.port)
		}
	}
	var svc serviceSpec
	m.get(t, "Service", releaseName).spec(t, &svc)
	for _, p := range svc.Ports {
		if p.Name == "admin" {
			t.Errorf("the admin port is on the client Service %s", releaseName)
		}
	}
}

func checkDisruptionBudget(t *testing.T, m manifests, dep deploymentSpec) {
	t.Helper()
	var pdb pdbSpec
	m.get(t, "PodDisruptionBudget", releaseName).spec(t, &pdb)
	if !maps.Equal(pdb.Selector.MatchLabels, dep.Selector.MatchLabels) {
		t.Errorf("PodDisruptionBudget selects %v, want the Deployment's %v", pdb.Selector.MatchLabels, dep.Selector.MatchLabels)
	}
	if (pdb.MinAvailable == nil) == (pdb.MaxUnavailable == nil) {
		t.Errorf("PodDisruptionBudget minAvailable %v, maxUnavailable %v: want exactly one", pdb.MinAvailable, pdb.MaxUnavailable)
	}
}

// checkConfig loads the ConfigMap's file as `gatehouse validate` would in the pod and checks
// what the Deployment derives from it: the termination grace period and the reload wiring.
func checkConfig(t *testing.T, r rendered) *server.Config {
	t.Helper()
	cfg, err := loadLikeValidate(t, r.configText, r.env)
	if err != nil {
		// Until the Redis state store is in this build, a Redis state section is the one
		// thing it may refuse; everything else must load.
		if strings.Contains(r.configText, "backend: redis") && !redisInSchema(t) && onlyStateErrors(err) {
			t.Logf("this build has no Redis state store yet; the rest of the configuration loads: %v", err)
			return nil
		}
		t.Fatalf("the rendered configuration does not validate:\n%v\n%s", err, r.configText)
	}
	pod := r.dep.Template.Spec
	var preStop int
	if l := r.c.Lifecycle; l != nil && l.PreStop != nil && l.PreStop.Sleep != nil {
		preStop = l.PreStop.Sleep.Seconds
	}
	need := preStop + int(math.Ceil(cfg.Server.ShutdownGrace.Seconds()))
	if pod.TerminationGracePeriodSeconds <= need {
		t.Errorf("terminationGracePeriodSeconds %d, want more than preStop %d s + shutdown_grace %s",
			pod.TerminationGracePeriodSeconds, preStop, cfg.Server.ShutdownGrace)
	}
	if _, rollout := r.dep.Template.Metadata.Annotations["checksum/config"]; !rollout && !cfg.WatchEnabled() {
		t.Error("neither a config checksum on the pods nor server.watch_config: a ConfigMap change would never apply")
	}
	return cfg
}

func checkDefaults(t *testing.T, r rendered) {
	t.Helper()
	if r.dep.Replicas == nil || *r.dep.Replicas != 1 {
		t.Errorf("replicas %v, want 1 (the embedded state store is one process's)", r.dep.Replicas)
	}
	if want := map[string]int{"boundary": 8080, "admin": 9901, "internal": 50051}; !maps.Equal(ports(r.c), want) {
		t.Errorf("container ports %v, want %v", ports(r.c), want)
	}
	for _, kind := range []string{"HorizontalPodAutoscaler", "ServiceMonitor", "Secret"} {
		if len(r.m[kind]) > 0 {
			t.Errorf("%s rendered by default", kind)
		}
	}
	// By default the environment is the pod's IP alone, for server.internal.advertise.
	if len(r.c.Env) != 1 || r.c.Env[0].Name != "POD_IP" || r.c.Env[0].ValueFrom == nil ||
		r.c.Env[0].ValueFrom.FieldRef == nil || r.c.Env[0].ValueFrom.FieldRef.FieldPath != "status.podIP" || len(r.c.EnvFrom) > 0 {
		t.Errorf("environment by default: %+v %+v", r.c.Env, r.c.EnvFrom)
	}
	if _, ok := r.dep.Template.Metadata.Annotations["checksum/config"]; ok {
		t.Error("reloadStrategy live (the default) rolls the pods on a config change")
	}
	var pdb pdbSpec
	r.m.get(t, "PodDisruptionBudget", releaseName).spec(t, &pdb)
	if pdb.MaxUnavailable != float64(1) {
		t.Errorf("PodDisruptionBudget maxUnavailable %v, want 1", pdb.MaxUnavailable)
	}
	if r.dep.Template.Spec.TerminationGracePeriodSeconds != 40 {
		t.Errorf("terminationGracePeriodSeconds %d, want 5 (preStop) + 20 (shutdown_grace) + 15", r.dep.Template.Spec.TerminationGracePeriodSeconds)
	}
	if in := r.cfg.Server.Internal; in == nil || in.Advertise != placeholder("POD_IP")+":50051" {
		t.Errorf("server.internal %+v: want advertise at the pod's IP and the internal port", in)
	}
	if b := r.cfg.State.Backend; b != "embedded" {
		t.Errorf("state.backend %q, want embedded", b)
	}
	if r.cfg.MCPFace == nil || r.cfg.MCPFace.SessionKey != "" {
		t.Errorf("mcp_face %+v: want the face on with a key per pod when no secret gives one", r.cfg.MCPFace)
	}
}

// wantSecretEnv checks that variable name comes from key of Secret secret.
func wantSecretEnv(t *testing.T, c container, name, secret, key string) {
	t.Helper()
	i := slices.IndexFunc(c.Env, func(e envVar) bool { return e.Name == name })
	if i < 0 {
		t.Fatalf("no env %s in %+v", name, c.Env)
	}
	e := c.Env[i]
	if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != secret || e.ValueFrom.SecretKeyRef.Key != key {
		t.Errorf("env %s = %+v, want secretKeyRef %s/%s", name, e, secret, key)
	}
}

func checkRedisWithSecret(t *testing.T, r rendered) {
	t.Helper()
	r.m.get(t, "Secret", releaseName)
	wantSecretEnv(t, r.c, "REDIS_PASSWORD", releaseName, "REDIS_PASSWORD")
	wantSecretEnv(t, r.c, "GATEHOUSE_MCP_SESSION_KEY", releaseName, "GATEHOUSE_MCP_SESSION_KEY")
	if got := r.env["REDIS_PASSWORD"]; got != "redis-password-from-the-secret" {
		t.Errorf("REDIS_PASSWORD resolves to %q, want the Secret's value", got)
	}
	if !strings.Contains(r.configText, "password: ${REDIS_PASSWORD}") {
		t.Errorf("the configuration does not read the password from the environment:\n%s", r.configText)
	}
	for _, a := range []string{"checksum/config", "checksum/secret"} {
		if r.dep.Template.Metadata.Annotations[a] == "" {
			t.Errorf("no %s annotation on the pods (reloadStrategy rollout, a Secret the chart makes)", a)
		}
	}
	if r.dep.Replicas == nil || *r.dep.Replicas != 3 {
		t.Errorf("replicas %v, want 3", r.dep.Replicas)
	}
	var pdb pdbSpec
	r.m.get(t, "PodDisruptionBudget", releaseName).spec(t, &pdb)
	if pdb.MinAvailable != float64(2) || pdb.MaxUnavailable != nil {
		t.Errorf("PodDisruptionBudget minAvailable %v maxUnavailable %v, want 2 and none", pdb.MinAvailable, pdb.MaxUnavailable)
	}
	if r.cfg != nil {
		if r.cfg.State.Backend != "redis" {
			t.Errorf("state.backend %q, want redis", r.cfg.State.Backend)
		}
		if r.cfg.MCPFace == nil || r.cfg.MCPFace.SessionKey != "0123456789abcdef0123456789abcdef0123456789abcdef" {
			t.Errorf("mcp_face.session_key does not come from the Secret: %+v", r.cfg.MCPFace)
		}
	}
}

func checkRedisExistingSecret(t *testing.T, r rendered) {
	t.Helper()
	if len(r.m["Secret"]) > 0 {
		t.Error("a Secret rendered beside secret.existingSecret")
	}
	if len(r.c.EnvFrom) != 1 || r.c.EnvFrom[0].SecretRef == nil || r.c.EnvFrom[0].SecretRef.Name != "gatehouse-secrets" {
		t.Errorf("envFrom %+v, want the Secret gatehouse-secrets", r.c.EnvFrom)
	}
	if got := r.env["GATEHOUSE_OTLP_ENDPOINT"]; got != "otel-collector.observability:4317" {
		t.Errorf("GATEHOUSE_OTLP_ENDPOINT %q", got)
	}
	if _, ok := r.dep.Template.Metadata.Annotations["checksum/config"]; ok {
		t.Error("reloadStrategy live rolls the pods on a config change")
	}
	if r.cfg != nil && r.cfg.State.Backend != "redis" {
		t.Errorf("state.backend %q, want redis", r.cfg.State.Backend)
	}
}

func checkAutoscaling(t *testing.T, r rendered) {
	t.Helper()
	var hpa hpaSpec
	o := r.m.get(t, "HorizontalPodAutoscaler", releaseName)
	o.spec(t, &hpa)
	if o.APIVersion != "autoscaling/v2" {
		t.Errorf("HorizontalPodAutoscaler apiVersion %s, want autoscaling/v2", o.APIVersion)
	}
	ref := hpa.ScaleTargetRef
	if ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != releaseName {
		t.Errorf("scaleTargetRef %+v, want the Deployment %s", ref, releaseName)
	}
	if hpa.MinReplicas != 3 || hpa.MaxReplicas != 12 {
		t.Errorf("replicas %d..%d, want 3..12", hpa.MinReplicas, hpa.MaxReplicas)
	}
	if len(hpa.Metrics) != 1 || hpa.Metrics[0].Resource.Name != "cpu" || hpa.Metrics[0].Resource.Target.Type != "Utilization" ||
		hpa.Metrics[0].Resource.Target.AverageUtilization != 60 {
		t.Errorf("metrics %+v, want CPU utilization 60%%", hpa.Metrics)
	}
	if r.dep.Replicas != nil {
		t.Errorf("the Deployment sets replicas %d beside the autoscaler", *r.dep.Replicas)
	}
	wantSecretEnv(t, r.c, "REDIS_PASSWORD", "redis", "redis-password")
}

func checkServiceMonitor(t *testing.T, r rendered) {
	t.Helper()
	o := r.m.get(t, "ServiceMonitor", releaseName)
	if o.APIVersion != "monitoring.coreos.com/v1" {
		t.Errorf("ServiceMonitor apiVersion %s", o.APIVersion)
	}
	if o.Metadata.Labels["release"] != "kube-prometheus-stack" {
		t.Errorf("ServiceMonitor labels %v: want serviceMonitor.labels among them", o.Metadata.Labels)
	}
	var sm serviceMonitorSpec
	o.spec(t, &sm)
	admin := r.m.get(t, "Service", releaseName+"-admin").Metadata.Labels
	client := r.m.get(t, "Service", releaseName).Metadata.Labels
	if !subset(sm.Selector.MatchLabels, admin) || subset(sm.Selector.MatchLabels, client) {
		t.Errorf("ServiceMonitor selects %v: want the admin Service %v only, not %v", sm.Selector.MatchLabels, admin, client)
	}
	if !slices.Equal(sm.NamespaceSelector.MatchNames, []string{"gateways"}) {
		t.Errorf("namespaceSelector %v, want the release's namespace", sm.NamespaceSelector.MatchNames)
	}
	if len(sm.Endpoints) != 1 || sm.Endpoints[0].Port != "admin" || sm.Endpoints[0].Path != "/metrics" {
		t.Fatalf("endpoints %+v, want admin /metrics", sm.Endpoints)
	}
	job := slices.IndexFunc(sm.Endpoints[0].Relabelings, func(rl relabeling) bool {
		return rl.TargetLabel == "job" && rl.Replacement == "gatehouse"
	})
	if job < 0 {
		t.Errorf("relabelings %+v: want job=gatehouse, as the alert rules expect", sm.Endpoints[0].Relabelings)
	}
	pod := r.dep.Template.Spec
	if pod.TerminationGracePeriodSeconds != 120 {
		t.Errorf("terminationGracePeriodSeconds %d, want the 120 given", pod.TerminationGracePeriodSeconds)
	}
	if r.cfg.Tracing == nil {
		t.Error("the tracing section did not reach the configuration")
	}
}
