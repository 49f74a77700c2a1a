package admin

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"time"

	"github.com/gatehouse-dev/gatehouse/faces"
)

// statusKey is the member of a probe's body that says how the gateway is.
const statusKey = "status"

// readyTimeout bounds the readiness checks of one /readyz.
const readyTimeout = 2 * time.Second

// Health is what one configuration's targets can serve (faces.TargetHealth).
type Health = faces.TargetHealth

// targetDetail is one target in /readyz's body.
type targetDetail struct {
	Up     bool   `json:"up"`
	Reason string `json:"reason,omitempty"`
}

// serveReady answers whether this replica can serve: 200 ("ready", or "degraded" while some
// targets are down but the rule still holds) and 503 ("not ready") while starting,
// draining, with the targets failing the readiness rule (server.readiness: by default 503
// only when every target is down — one MCP server down must not pull every replica out of
// the load balancer, since each replica sees the same server and would refuse the calls
// of every other target too; while the gateway starts, every target must be up), or with the shared state store out of reach ("state": the
// backend and its error): a replica that cannot reach the store would refuse every call
// needing it (idempotency, approvals, tasks, sessions), so it leaves the rotation until
// the store answers again. Every target's health is in the body under "targets". Breakers that are
// open or half-open are listed under "breakers" either way, but do not by themselves make
// the gateway not ready: a breaker guards one backend, every replica sees the same
// backend, and taking replicas out of rotation for it would refuse the calls of every
// other backend too, which the breaker already spares by failing fast.
func (f *Face) serveReady(w http.ResponseWriter, r *http.Request) {
	switch {
	case f.gw.Draining():
		writeJSONStatus(w, http.StatusServiceUnavailable, map[string]any{statusKey: "draining"})
		return
	case !f.gw.Serving():
		writeJSONStatus(w, http.StatusServiceUnavailable, map[string]any{statusKey: "starting"})
		return
	}
	rt := f.gw.Acquire()
	defer rt.Release()
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	body, status := map[string]any{statusKey: "ready"}, http.StatusOK
	h := rt.Health(ctx)
	if len(h.Targets) > 0 {
		detail := make(map[string]targetDetail, len(h.Targets))
		for name, err := range h.Targets {
			d := targetDetail{Up: err == nil}
			if err != nil {
				d.Reason = err.Error()
			}
			detail[name] = d
		}
		body["targets"] = detail
	}
	maps.Copy(body, h.Info) // informational: readiness is unchanged
	switch ok, down := h.Ready(); {
	case !ok:
		body[statusKey], status = "not ready", http.StatusServiceUnavailable
	case down > 0:
		body[statusKey] = "degraded"
	}
	if err := f.gw.PingState(ctx); err != nil {
		body[statusKey], status = "not ready", http.StatusServiceUnavailable
		body["state"] = map[string]string{"backend": f.gw.StateBackend(), "error": err.Error()}
	}
	if tripped := rt.TrippedBreakers(); len(tripped) > 0 {
		body["breakers"] = tripped
	}
	writeJSONStatus(w, status, body)
}

// writeJSONStatus answers status with v as its JSON body.
func writeJSONStatus(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
