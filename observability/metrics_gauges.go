package observability

import "github.com/prometheus/client_golang/prometheus"

// Breaker states as the values of circuit_breaker_state.
const (
	BreakerClosed   = 0
	BreakerHalfOpen = 1
	BreakerOpen     = 2
)

// Gauges are the values of the gauges whose state lives elsewhere — in the breakers, the
// MCP bridge, the admission controller, the approval store — read once per scrape, so
// nothing on the hot path keeps them up to date. A nil map (or a negative number) leaves
// its metric out of the scrape.
type Gauges struct {
	// Breakers is each breaker's state by backend: BreakerClosed, BreakerHalfOpen or
	// BreakerOpen (circuit_breaker_state{service}).
	Breakers map[string]int
	// MCPServers is the live MCP upstream sessions by transport (mcp_connected_servers).
	MCPServers map[string]int
	// QueueDepth is the calls waiting in each backend's queue (gatehouse_queue_depth).
	QueueDepth map[string]int
	// AdmissionLimit is the global adaptive concurrency limit (gatehouse_admission_limit);
	// negative without one.
	AdmissionLimit float64
	// ApprovalsPending is the calls waiting for an operator's approval
	// (gatehouse_approvals_pending); negative without an approval stage.
	ApprovalsPending int
	// TargetUp is each target's health by name — a gRPC backend, an MCP upstream
	// ("mcp:<name>") —, 1 when it can serve and 0 when not (gatehouse_target_up{target}).
	TargetUp map[string]int
	// ToolsWithheld is, by MCP upstream, how many tools it lists that the bridge does not
	// serve because their inputSchema cannot be used (gatehouse_mcp_tools_withheld{upstream}).
	ToolsWithheld map[string]int
	// AgentsConnected is the agents connected to this replica's agent link
	// (gatehouse_agents_connected); negative without one.
	AgentsConnected int
	// AgentOutstanding is, by connected agent id, the tasks dispatched to it and not yet
	// finished (gatehouse_agent_tasks_outstanding{agent}).
	AgentOutstanding map[string]int
	// MCPListCache is the MCP face's list cache counters
	// (gatehouse_mcp_list_cache_{hits,misses,evictions}_total, gatehouse_mcp_list_cache_entries,
	// gatehouse_mcp_list_cache_bytes); nil without the cache.
	MCPListCache *CacheCounters
	// MCPReadCache is the MCP bridge's resources/read cache counters
	// (gatehouse_mcp_read_cache_{hits,misses,evictions}_total, gatehouse_mcp_read_cache_entries,
	// gatehouse_mcp_read_cache_bytes); nil without the cache.
	MCPReadCache *CacheCounters
	// MCPProtocols are, per MCP upstream, the protocol revisions its pool's last connection
	// found it speaks (gatehouse_mcp_upstream_protocol{upstream, version, probe, negotiated}).
	MCPProtocols []MCPProtocol
	// MCPCallerSessions is, by MCP upstream under session_affinity caller, the callers'
	// sessions this replica holds (gatehouse_mcp_caller_sessions{upstream}).
	MCPCallerSessions map[string]int
}

// MCPProtocol is one protocol revision an MCP upstream speaks: Probe says how it was
// learnt ("server/discover" or "initialize"), Negotiated whether the gateway speaks it
// with the upstream.
type MCPProtocol struct {
	Upstream, Version, Probe string
	Negotiated               bool
}

// CacheCounters are a cache's counters since the process started, and what it holds now.
type CacheCounters struct {
	Hits, Misses, Evictions uint64
	Entries, Bytes          int
}

// SetGauges sets the function read at every scrape for the values of Gauges; it must be
// safe for concurrent use and quick (it runs on the scrape's goroutine).
func (m *Metrics) SetGauges(fn func() Gauges) {
	if m == nil {
		return
	}
	m.gauges.Store(&fn)
}

var (
	descBreaker = prometheus.NewDesc("circuit_breaker_state",
		"Circuit breaker state by backend: 0 closed, 1 half-open, 2 open.", []string{"service"}, nil)
	descMCPServers = prometheus.NewDesc("mcp_connected_servers",
		"Live sessions with MCP servers, by transport.", []string{"transport"}, nil)
	descQueueDepth = prometheus.NewDesc("gatehouse_queue_depth",
		"Calls waiting in a backend's admission queue.", []string{"backend"}, nil)
	descAdmissionLimit = prometheus.NewDesc("gatehouse_admission_limit",
		"The global adaptive concurrency limit.", nil, nil)
	descApprovals = prometheus.NewDesc("gatehouse_approvals_pending",
		"Calls waiting for an operator's approval.", nil, nil)
	descTargetUp = prometheus.NewDesc("gatehouse_target_up",
		"Whether a target (gRPC backend, MCP upstream) can serve: 1 up, 0 down.", []string{"target"}, nil)
	descAgents = prometheus.NewDesc("gatehouse_agents_connected",
		"Agents connected to this replica's agent link.", nil, nil)
	descAgentOutstanding = prometheus.NewDesc("gatehouse_agent_tasks_outstanding",
		"Tasks dispatched to a connected agent and not yet finished, by agent.", []string{"agent"}, nil)
	descToolsWithheld = prometheus.NewDesc("gatehouse_mcp_tools_withheld",
		"Tools an MCP upstream lists that the gateway does not serve (their inputSchema cannot be used).", []string{"upstream"}, nil)
	descListCacheHits = prometheus.NewDesc("gatehouse_mcp_list_cache_hits_total",
		"MCP face list requests (tools/list, resources/list, resources/templates/list, prompts/list) answered from the list cache.", nil, nil)
	descListCacheMisses = prometheus.NewDesc("gatehouse_mcp_list_cache_misses_total",
		"MCP face list requests narrowed for the caller and stored in the list cache.", nil, nil)
	descListCacheEvictions = prometheus.NewDesc("gatehouse_mcp_list_cache_evictions_total",
		"Entries dropped from the MCP face's list cache: past its bounds, expired, or invalidated by a catalog change.", nil, nil)
	descListCacheEntries = prometheus.NewDesc("gatehouse_mcp_list_cache_entries",
		"Narrowed lists the MCP face's list cache holds.", nil, nil)
	descListCacheBytes = prometheus.NewDesc("gatehouse_mcp_list_cache_bytes",
		"Size of the lists the MCP face's list cache holds, as JSON.", nil, nil)
	descReadCacheHits = prometheus.NewDesc("gatehouse_mcp_read_cache_hits_total",
		"MCP resources/read calls answered from the read cache (results upstreams marked cacheable with ttlMs).", nil, nil)
	descReadCacheMisses = prometheus.NewDesc("gatehouse_mcp_read_cache_misses_total",
		"MCP resources/read calls that reached their upstream (nothing live cached for the caller).", nil, nil)
	descReadCacheEvictions = prometheus.NewDesc("gatehouse_mcp_read_cache_evictions_total",
		"Entries dropped from the MCP read cache: past its bounds, expired, or invalidated by a catalog change or resources/updated.", nil, nil)
	descReadCacheEntries = prometheus.NewDesc("gatehouse_mcp_read_cache_entries",
		"resources/read results the MCP read cache holds.", nil, nil)
	descReadCacheBytes = prometheus.NewDesc("gatehouse_mcp_read_cache_bytes",
		"Size of the results the MCP read cache holds, as JSON.", nil, nil)
	descMCPProtocol = prometheus.NewDesc("gatehouse_mcp_upstream_protocol",
		"1 for each MCP protocol revision an upstream speaks, as its last connection found (probe: server/discover or initialize); negotiated says which one the gateway uses.",
		[]string{labelUpstream, "version", "probe", "negotiated"}, nil)
	descMCPCallerSessions = prometheus.NewDesc("gatehouse_mcp_caller_sessions",
		"Callers' upstream sessions this replica holds, by MCP upstream (session_affinity caller).", []string{labelUpstream}, nil)
)

// labelUpstream is the label naming an MCP upstream.
const labelUpstream = "upstream"

// gaugeCollector exports Gauges at scrape time.
type gaugeCollector struct{ m *Metrics }

// Describe implements prometheus.Collector.
func (gaugeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBreaker, descMCPServers, descQueueDepth, descAdmissionLimit, descApprovals, descTargetUp, descToolsWithheld, descAgents, descAgentOutstanding,
		descListCacheHits, descListCacheMisses, descListCacheEvictions, descListCacheEntries, descListCacheBytes,
		descReadCacheHits, descReadCacheMisses, descReadCacheEvictions, descReadCacheEntries, descReadCacheBytes,
		descMCPProtocol, descMCPCallerSessions} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c gaugeCollector) Collect(ch chan<- prometheus.Metric) {
	fn := c.m.gauges.Load()
	if fn == nil {
		return
	}
	g := (*fn)()
	labelled := func(d *prometheus.Desc, values map[string]int) {
		for label, v := range values {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), label)
		}
	}
	labelled(descBreaker, g.Breakers)
	labelled(descMCPServers, g.MCPServers)
	labelled(descQueueDepth, g.QueueDepth)
	labelled(descTargetUp, g.TargetUp)
	labelled(descToolsWithheld, g.ToolsWithheld)
	labelled(descAgentOutstanding, g.AgentOutstanding)
	cacheCounters(ch, g.MCPListCache, descListCacheHits, descListCacheMisses, descListCacheEvictions, descListCacheEntries, descListCacheBytes)
	cacheCounters(ch, g.MCPReadCache, descReadCacheHits, descReadCacheMisses, descReadCacheEvictions, descReadCacheEntries, descReadCacheBytes)
	labelled(descMCPCallerSessions, g.MCPCallerSessions)
	for _, p := range g.MCPProtocols {
		negotiated := "false"
		if p.Negotiated {
			negotiated = "true"
		}
		ch <- prometheus.MustNewConstMetric(descMCPProtocol, prometheus.GaugeValue, 1, p.Upstream, p.Version, p.Probe, negotiated)
	}
	if g.AgentsConnected >= 0 {
		ch <- prometheus.MustNewConstMetric(descAgents, prometheus.GaugeValue, float64(g.AgentsConnected))
	}
	if g.AdmissionLimit >= 0 {
		ch <- prometheus.MustNewConstMetric(descAdmissionLimit, prometheus.GaugeValue, g.AdmissionLimit)
	}
	if g.ApprovalsPending >= 0 {
		ch <- prometheus.MustNewConstMetric(descApprovals, prometheus.GaugeValue, float64(g.ApprovalsPending))
	}
}

// cacheCounters exports c, when there is one, as its hits, misses and evictions counters
// and its entries and bytes gauges.
func cacheCounters(ch chan<- prometheus.Metric, c *CacheCounters, hits, misses, evictions, entries, bytes *prometheus.Desc) {
	if c == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(hits, prometheus.CounterValue, float64(c.Hits))
	ch <- prometheus.MustNewConstMetric(misses, prometheus.CounterValue, float64(c.Misses))
	ch <- prometheus.MustNewConstMetric(evictions, prometheus.CounterValue, float64(c.Evictions))
	ch <- prometheus.MustNewConstMetric(entries, prometheus.GaugeValue, float64(c.Entries))
	ch <- prometheus.MustNewConstMetric(bytes, prometheus.GaugeValue, float64(c.Bytes))
}
