package server

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/gatehouse-dev/gatehouse/state"
)

const statusKey = "status"

// adminHandler returns the handler of the operator listener: probes, the Prometheus
// metrics at GET /metrics, and the admin JSON-RPC API at POST /rpc. The probes and
// /metrics ask for no credential, like a scraper and a kubelet expect: the admin listener
// is the operator's (loopback by default) and they reveal no call's content.
func (s *Server) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSONStatus(w, http.StatusOK, map[string]any{statusKey: "ok"})
	})
	mux.HandleFunc("GET /readyz", s.handleReady)
	mux.Handle("GET /metrics", s.handleMetrics())
	mux.HandleFunc("POST /rpc", s.handleAdminRPC) // admin JSON-RPC: admin.approvals.* (approvaladmin.go)
	return mux
}

// handleReady answers 200 once the server serves with every target ready, and 503 while
// starting, draining, with a target not ready (named in the body), or with the shared state
// store out of reach ("state": the backend and its error): a replica that cannot reach the
// store would refuse every call needing it (idempotency, approvals, tasks, sessions), so it
// leaves the rotation until the store answers again. Breakers that are
// open or half-open are listed under "breakers" either way, but do not by themselves make
// the gateway not ready: a breaker guards one backend, every replica sees the same
// backend, and taking replicas out of rotation for it would refuse the calls of every
// other backend too, which the breaker already spares by failing fast.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	switch {
	case s.draining.Load():
		writeJSONStatus(w, http.StatusServiceUnavailable, map[string]any{statusKey: "draining"})
		return
	case !s.serving.Load():
		writeJSONStatus(w, http.StatusServiceUnavailable, map[string]any{statusKey: "starting"})
		return
	}
	rt := s.acquire()
	defer rt.release()
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	body, status := map[string]any{statusKey: "ready"}, http.StatusOK
	if problems := rt.ready(ctx); len(problems) > 0 {
		body, status = map[string]any{statusKey: "not ready", "targets": problems}, http.StatusServiceUnavailable
	}
	if err := s.pingState(ctx); err != nil {
		body[statusKey], status = "not ready", http.StatusServiceUnavailable
		body["state"] = map[string]string{"backend": s.stateBackend(), "error": err.Error()}
	}
	if tripped := rt.trippedBreakers(); len(tripped) > 0 {
		body["breakers"] = tripped
	}
	writeJSONStatus(w, status, body)
}

func writeJSONStatus(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// pingState reports whether the state store answers; a store that cannot be out of reach
// (the embedded one) always does.
func (s *Server) pingState(ctx context.Context) error {
	p, ok := s.kv.(state.Pinger)
	if !ok {
		return nil
	}
	return p.Ping(ctx)
}

// stateBackend names the state backend in use.
func (s *Server) stateBackend() string {
	if s.stateCfg.Backend == "" {
		return state.BackendEmbedded
	}
	return s.stateCfg.Backend
}
