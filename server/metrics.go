package server

import (
	"context"
	"time"

	mcpface "github.com/gatehouse-dev/gatehouse/faces/mcp"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/resilience"
)

// jsonrpcVersion is the version label of the JSON-RPC faces.
const jsonrpcVersion = "2.0"

// protocolVersion is the version label of a call: "2.0" on the JSON-RPC faces, the MCP
// session's negotiated version (one mcp-go knows, else "other") on the MCP face, "" for
// gRPC.
func protocolVersion(ctx context.Context, p gateway.Protocol) string {
	switch p {
	case gateway.ProtocolGRPC:
		return ""
	case gateway.ProtocolMCP:
		return mcpface.VersionLabel(ctx)
	default:
		return jsonrpcVersion
	}
}

// gauges reads, at scrape time, the gauges whose state lives in the current runtime.
func (s *Server) gauges() observability.Gauges {
	rt := s.acquire()
	defer rt.release()
	g := observability.Gauges{AdmissionLimit: -1, ApprovalsPending: -1, AgentsConnected: -1}
	s.agentGauges(&g) // agentlink.go
	if b := rt.breakers; b != nil {
		g.Breakers = make(map[string]int)
		for _, st := range b.States() {
			g.Breakers[st.Backend] = breakerValue(st.State)
		}
	}
	if a := rt.admission; a != nil {
		g.QueueDepth = a.QueueDepths()
		if limit, ok := a.Limit(); ok {
			g.AdmissionLimit = float64(limit)
		}
	}
	if rt.cfg.Policy != nil {
		g.ApprovalsPending = s.approvalsPending(rt)
	}
	if s.mcp != nil {
		if st, on := s.mcp.ListCacheStats(); on {
			g.MCPListCache = &observability.CacheCounters{Hits: st.Hits, Misses: st.Misses, Evictions: st.Evictions, Entries: st.Entries, Bytes: st.Bytes}
		}
	}
	if mt := rt.table.MCP(); mt != nil {
		g.MCPServers = mt.Connected()
		g.ToolsWithheld = mt.WithheldByUpstream()
		if st, on := mt.ReadCacheStats(); on {
			g.MCPReadCache = &observability.CacheCounters{Hits: st.Hits, Misses: st.Misses, Evictions: st.Evictions, Entries: st.Entries, Bytes: st.Bytes}
		}
		g.MCPCallerSessions = mt.CallerSessions()
		for name, p := range mt.Probes() {
			for _, v := range p.Versions {
				g.MCPProtocols = append(g.MCPProtocols, observability.MCPProtocol{Upstream: name, Version: v, Probe: p.Method, Negotiated: v == p.Negotiated})
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeStoreTimeout)
	defer cancel()
	g.TargetUp = make(map[string]int)
	for name, err := range rt.table.Health(ctx) {
		g.TargetUp[name] = boolInt(err == nil)
	}
	return g
}

// breakerValue is a breaker state as circuit_breaker_state's value.
func breakerValue(state string) int {
	switch state {
	case resilience.BreakerOpen:
		return observability.BreakerOpen
	case resilience.BreakerHalfOpen:
		return observability.BreakerHalfOpen
	default:
		return observability.BreakerClosed
	}
}

// startMetrics makes the process's metrics when cfg leaves them on, with the gauges read
// at scrape time from the runtime serving then.
func (s *Server) startMetrics(cfg *Config) {
	if !cfg.Metrics.On() {
		return
	}
	s.metrics = observability.NewMetrics()
	s.metrics.SetGauges(s.gauges)
	// the last minutes of each backend's calls and the recent errors, for the admin API
	// and the console (server.admin.console's window settings)
	cc := cfg.Server.Admin.Console.WithDefaults()
	s.metrics.SetWindow(observability.NewWindow(cc.WindowBucket, cc.WindowBuckets, cc.RecentErrors, nil)) // the wall clock, as the metrics stage's
}

// scrapeStoreTimeout bounds the state-store reads of one scrape.
const scrapeStoreTimeout = 2 * time.Second

// approvalsPending counts the calls waiting for an operator's approval in the state store
// (every replica's, when replicas share it); -1, leaving the gauge out, when the store
// cannot be read.
func (s *Server) approvalsPending(rt *runtime) int {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeStoreTimeout)
	defer cancel()
	recs, err := approvalStore(s.kv, rt).Pending(ctx)
	if err != nil {
		s.log.Warn("metrics: reading pending approvals", "err", err)
		return -1
	}
	return len(recs)
}
