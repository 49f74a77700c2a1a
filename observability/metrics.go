package observability

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// OtherLabel is the label value of everything outside a label's bounded set: a method no
// route names, an error code the error table does not hold.
const OtherLabel = "other"

// Token verification results, the values of gatehouse_tokens_verified_total's result label.
const (
	TokenVerified = "verified"
	TokenCached   = "cached"
	TokenRefused  = "refused"
)

// DurationBuckets are the upper bounds, in seconds, of every duration histogram: from
// 100µs, so sub-millisecond gateway work is resolved, to 10s, the longest deadline most
// calls get.
var DurationBuckets = []float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// Metrics is one process's Prometheus metrics: its own registry (never the global default
// one) and the collectors of every metric Gatehouse exports. The server calls its methods;
// no Prometheus type leaves this package. A nil *Metrics discards everything, so metrics
// that are off cost a nil check.
//
// Label values are bounded by the caller of each method as its doc says, and here where
// this package can: error codes outside the error table and unknown token results are
// folded into OtherLabel.
type Metrics struct {
	reg *prometheus.Registry

	requests     *prometheus.CounterVec
	errors       *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	transcodes   *prometheus.CounterVec
	transcodeDur *prometheus.HistogramVec
	toolCalls    *prometheus.HistogramVec
	streams      *prometheus.GaugeVec

	upstreamStarts *prometheus.CounterVec
	a2aCards       *prometheus.CounterVec // a2a.go
	queueWait      *prometheus.HistogramVec
	admissionRej   *prometheus.CounterVec
	rateLimitRej   *prometheus.CounterVec
	retries        *prometheus.CounterVec
	tokensMinted   prometheus.Counter
	a2aPush        *prometheus.CounterVec
	tokensVerified *prometheus.CounterVec
	reloads        *prometheus.CounterVec
	tasks          *prometheus.GaugeVec
	agentTasks     *prometheus.CounterVec
	agentGaps      prometheus.Histogram

	// codes are the labels of the error table's codes.
	codes map[schemas.Code]string
	// series caches the children of one request's label values (seriesKey → *callSeries),
	// so a call costs one map lookup instead of three label hashes.
	series sync.Map
	// transcodings caches the children of one transcoding's label values (transcodeKey →
	// *transcodeSeries), for the same reason: every transcoded call reports two.
	transcodings sync.Map
	// gauges reads the gauges kept elsewhere, at scrape time; nil until SetGauges.
	gauges atomic.Pointer[func() Gauges]
	// window keeps the last minutes of each backend's calls and the recent errors for the
	// admin API (window.go); nil until SetWindow.
	window atomic.Pointer[Window]
}

// NewMetrics returns the metrics of one process, with the Go runtime and process
// collectors beside Gatehouse's own.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), codes: make(map[schemas.Code]string)}
	for _, k := range schemas.Kinds() {
		m.codes[k.Code] = strconv.Itoa(int(k.Code))
	}
	m.requests = counterVec("protocol_requests_total", "Calls by ingress protocol, method, outcome (success or error) and protocol version.", "protocol", "method", "status", "version")
	m.errors = counterVec("protocol_errors_total", "Failed calls by ingress protocol, error code and method.", "protocol", "error_code", "method")
	m.duration = histogramVec("protocol_request_duration_seconds", "Time from the top of the pipeline to the call's result.", "protocol", "method")
	m.transcodes = counterVec("gateway_transcoding_total", "Messages transcoded, by source and target protocol and backend method.", "source_protocol", "target_protocol", "method")
	m.transcodeDur = histogramVec("gateway_transcoding_duration_seconds", "Time one transcoding plan took.", "source", "target")
	m.toolCalls = histogramVec("mcp_tool_call_duration_seconds", "Tool calls through the MCP bridge, by catalog tool name and MCP server.", "tool_name", "server_id")
	m.streams = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "grpc_active_streams", Help: "Streaming RPCs open to gRPC backends."}, []string{"service", "method"})
	m.upstreamStarts = counterVec("gatehouse_upstream_starts_total", "MCP upstream sessions started (first start and every restart), by configured server.", "server")
	m.queueWait = histogramVec("gatehouse_queue_wait_seconds", "Time an admitted call waited in its backend's queue.", "backend")
	m.admissionRej = counterVec("gatehouse_admission_rejections_total", "Calls refused by admission control, by backend and reason.", "backend", "reason")
	m.rateLimitRej = counterVec("gatehouse_rate_limit_rejections_total", "Calls refused by a rate-limit rule.", "rule")
	m.retries = counterVec("gatehouse_retries_total", "Calls retried after a failure that never reached the backend.", "backend")
	m.tokensMinted = prometheus.NewCounter(prometheus.CounterOpts{Name: "gatehouse_tokens_minted_total", Help: "Downstream tokens minted for hops."})
	m.a2aPush = counterVec("gatehouse_a2a_push_deliveries_total", "A2A push notification attempts by outcome: delivered, retried, failed (refused or out of attempts), dropped (queue full).", "outcome")
	m.tokensVerified = counterVec("gatehouse_tokens_verified_total", "Bearer tokens checked at ingress: verified, served from the token cache, or refused.", "result")
	m.reloads = counterVec("gatehouse_config_reloads_total", "Configuration reloads, ok or refused.", "result")
	m.tasks = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gatehouse_tasks",
		Help: "Unfinished NEKTE tasks by state, as this replica's changes count them: sum across replicas."}, []string{"state"})
	m.agentTasks = counterVec("gatehouse_agent_tasks_total", "Tasks dispatched to this replica's agents, by operator and outcome (ok, rejected, failed, timeout, gone, cancelled).", "operator", "outcome")
	m.agentGaps = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gatehouse_agent_heartbeat_gap_seconds",
		Help: "Time between two messages of a connected agent (its heartbeats or any other), and the silence that ends a connection.", Buckets: DurationBuckets})
	m.reg.MustRegister(m.agentTasks, m.agentGaps, m.a2aPush)
	m.a2aCards = counterVec("gatehouse_a2a_card_fetches_total", "Card fetches of upstream A2A agents, by agent and result (ok, fetch, signature, invalid).", "agent", "result")
	m.reg.MustRegister(m.a2aCards)
	m.reg.MustRegister(m.requests, m.errors, m.duration, m.transcodes, m.transcodeDur, m.toolCalls, m.streams,
		m.upstreamStarts, m.queueWait, m.admissionRej, m.rateLimitRej, m.retries, m.tokensMinted, m.tokensVerified, m.reloads, m.tasks,
		gaugeCollector{m}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

func histogramVec(name, help string, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: DurationBuckets}, labels)
}

// Handler serves the metrics in the Prometheus text exposition format (or OpenMetrics,
// when the scraper asks for it).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, EnableOpenMetrics: true})
}

// Request is one call as the top of the pipeline saw it.
type Request struct {
	// Protocol is the ingress protocol (gateway.Protocol.String()).
	Protocol string
	// Method is the JSON-RPC method; it is a label only when Routed is set, OtherLabel
	// otherwise.
	Method string
	// Routed reports that the configuration routes Method by name, which bounds the label.
	Routed bool
	// Version is the protocol version: "2.0" for JSON-RPC, the MCP version, "" for gRPC.
	Version string
	// Err is the call's error, nil for a success.
	Err *gateway.Error
	// Duration is how long the call took.
	Duration time.Duration
}

type seriesKey struct {
	protocol, method, version string
	failed                    bool
}

type callSeries struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// ObserveRequest records one call: protocol_requests_total, protocol_request_duration_seconds
// and, for a failure, protocol_errors_total.
func (m *Metrics) ObserveRequest(r Request) {
	if m == nil {
		return
	}
	method := r.Method
	if !r.Routed {
		method = OtherLabel
	}
	key := seriesKey{protocol: r.Protocol, method: method, version: r.Version, failed: r.Err != nil}
	s, ok := m.series.Load(key)
	if !ok {
		status := "success"
		if key.failed {
			status = "error"
		}
		s, _ = m.series.LoadOrStore(key, &callSeries{
			requests: m.requests.WithLabelValues(key.protocol, method, status, key.version),
			duration: m.duration.WithLabelValues(key.protocol, method),
		})
	}
	cs := s.(*callSeries)
	cs.requests.Inc()
	cs.duration.Observe(r.Duration.Seconds())
	if r.Err != nil {
		m.errors.WithLabelValues(r.Protocol, m.codeLabel(r.Err.Code()), method).Inc()
	}
}

// codeLabel is code as a label: its number when the error table holds it, OtherLabel for
// anything else (a backend's own code).
func (m *Metrics) codeLabel(code schemas.Code) string {
	if l, ok := m.codes[code]; ok {
		return l
	}
	return OtherLabel
}

var _ gateway.Observer = (*Metrics)(nil)

type transcodeKey struct{ source, target, method string }

type transcodeSeries struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

// Transcoded implements gateway.Observer: gateway_transcoding_total and
// gateway_transcoding_duration_seconds. The method is a backend's method, bounded by the
// backends' descriptors.
func (m *Metrics) Transcoded(source, target, method string, d time.Duration) {
	if m == nil {
		return
	}
	key := transcodeKey{source: source, target: target, method: method}
	s, ok := m.transcodings.Load(key)
	if !ok {
		s, _ = m.transcodings.LoadOrStore(key, &transcodeSeries{
			count:    m.transcodes.WithLabelValues(source, target, method),
			duration: m.transcodeDur.WithLabelValues(source, target),
		})
	}
	ts := s.(*transcodeSeries)
	ts.count.Inc()
	ts.duration.Observe(d.Seconds())
}

// StreamOpened implements gateway.Observer: grpc_active_streams.
func (m *Metrics) StreamOpened(service, method string) func() {
	if m == nil {
		return func() {}
	}
	g := m.streams.WithLabelValues(service, method)
	g.Inc()
	var once sync.Once
	return func() { once.Do(g.Dec) }
}

// ToolCalled implements gateway.Observer: mcp_tool_call_duration_seconds.
func (m *Metrics) ToolCalled(tool, server string, d time.Duration) {
	if m == nil {
		return
	}
	m.toolCalls.WithLabelValues(tool, server).Observe(d.Seconds())
}

// AgentTaskDone counts one task dispatched to an agent of this replica, by operator and
// outcome: ok, rejected, failed, timeout, gone or cancelled.
func (m *Metrics) AgentTaskDone(operator, outcome string) {
	if m == nil {
		return
	}
	m.agentTasks.WithLabelValues(operator, outcome).Inc()
}

// AgentHeartbeatGap records the time between two messages of a connected agent.
func (m *Metrics) AgentHeartbeatGap(d time.Duration) {
	if m == nil {
		return
	}
	m.agentGaps.Observe(d.Seconds())
}

// UpstreamStarted counts one MCP session started with the configured server.
func (m *Metrics) UpstreamStarted(server string) {
	if m == nil {
		return
	}
	m.upstreamStarts.WithLabelValues(server).Inc()
}

// QueueWaited records the time a call admitted to backend waited in its queue.
func (m *Metrics) QueueWaited(backend string, d time.Duration) {
	if m == nil {
		return
	}
	m.queueWait.WithLabelValues(backend).Observe(d.Seconds())
}

// AdmissionRejected counts one call admission control refused for backend ("" is the
// global limit); reason is one of the admission stage's fixed reasons.
func (m *Metrics) AdmissionRejected(backend, reason string) {
	if m == nil {
		return
	}
	m.admissionRej.WithLabelValues(backend, reason).Inc()
}

// RateLimited counts one call refused by the configured rate-limit rule.
func (m *Metrics) RateLimited(rule string) {
	if m == nil {
		return
	}
	m.rateLimitRej.WithLabelValues(rule).Inc()
}

// Retried counts one retry of a call to the configured backend.
func (m *Metrics) Retried(backend string) {
	if m == nil {
		return
	}
	m.retries.WithLabelValues(backend).Inc()
}

// TokenMinted counts one downstream token minted.
func (m *Metrics) TokenMinted() {
	if m == nil {
		return
	}
	m.tokensMinted.Inc()
}

// A2APush counts one A2A push notification outcome (faces/a2a: delivered, retried,
// failed, dropped; anything else counts as OtherLabel).
func (m *Metrics) A2APush(outcome string) {
	if m == nil {
		return
	}
	switch outcome {
	case "delivered", "retried", "failed", "dropped":
	default:
		outcome = OtherLabel
	}
	m.a2aPush.WithLabelValues(outcome).Inc()
}

// TokenChecked counts one bearer token checked at ingress; result is TokenVerified,
// TokenCached or TokenRefused (anything else counts as OtherLabel).
func (m *Metrics) TokenChecked(result string) {
	if m == nil {
		return
	}
	switch result {
	case TokenVerified, TokenCached, TokenRefused:
	default:
		result = OtherLabel
	}
	m.tokensVerified.WithLabelValues(result).Inc()
}

// ConfigReloaded counts one configuration reload, ok or refused.
func (m *Metrics) ConfigReloaded(ok bool) {
	if m == nil {
		return
	}
	result := "refused"
	if ok {
		result = "ok"
	}
	m.reloads.WithLabelValues(result).Inc()
}

// unfinishedTasks are the task states gatehouse_tasks counts: those a task leaves again.
// Final states are not gauged (a finished task's record only expires).
var unfinishedTasks = map[string]bool{"pending": true, "accepted": true, "running": true, "suspended": true}

// TaskMoved records a NEKTE task's status change made by this process (from "" at
// creation, to "" when discarded) in gatehouse_tasks. Each replica counts the changes it
// makes, so one replica's value may go below zero (a task it created finished on another)
// while the sum across replicas is the number of unfinished tasks.
func (m *Metrics) TaskMoved(from, to string) {
	if m == nil {
		return
	}
	if unfinishedTasks[from] {
		m.tasks.WithLabelValues(from).Dec()
	}
	if unfinishedTasks[to] {
		m.tasks.WithLabelValues(to).Inc()
	}
}

// SetWindow makes w the window the metrics stage feeds (window.go).
func (m *Metrics) SetWindow(w *Window) {
	if m != nil {
		m.window.Store(w)
	}
}

// Window returns the window the metrics stage feeds; nil when metrics are off or none was
// set.
func (m *Metrics) Window() *Window {
	if m == nil {
		return nil
	}
	return m.window.Load()
}

// maxRecentMessage bounds the message of one recent error, in bytes.
const maxRecentMessage = 512

// clipMessage is msg cut to at most limit bytes, never inside a rune (the console shows
// it, and JSON would turn a split rune into U+FFFD).
func clipMessage(msg string, limit int) string {
	if len(msg) <= limit {
		return msg
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut]
}

// observeWindow records one call in the window, when there is one: by its backend (or,
// for a target served in the process, the target's name; a call refused before routing
// counts in no backend), and,
// when it failed, as a recent error. The method of a call the configuration does not
// route by name is OtherLabel, as in the metrics.
func (m *Metrics) observeWindow(call *gateway.Call, routed bool, err *gateway.Error, end time.Time, d time.Duration) {
	w := m.window.Load()
	if w == nil {
		return
	}
	backend := gateway.BackendOf(call)
	if backend == "" && call.Target != nil {
		backend = call.Target.Name() // a target of the gateway's own (the demo, NEKTE): named by the configuration too
	}
	if err == nil {
		w.Observe(end, backend, d, RecentError{}, false)
		return
	}
	method := call.Method
	if !routed {
		method = OtherLabel
	}
	msg := clipMessage(err.Message(), maxRecentMessage)
	w.Observe(end, backend, d, RecentError{
		At: end.UnixMilli(), Code: err.Code(), Kind: schemas.KindOf(err.Code()).Name, Message: msg,
		Method: method, Backend: backend, Protocol: call.Protocol.String(), TraceID: call.TraceID,
	}, true)
}
