package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// statusKey is the member of a probe's body that says how the gateway is.
const statusKey = "status"

// readyTimeout bounds the readiness checks of one /readyz.
const readyTimeout = 2 * time.Second

// serveReady answers 200 once the gateway serves with every target ready, and 503 while
// starting, draining, with a target not ready (named in the body), or with the shared state
// store out of reach ("state": the backend and its error): a replica that cannot reach the
// store would refuse every call needing it (idempotency, approvals, tasks, sessions), so it
// leaves the rotation until the store answers again. Breakers that are
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
	if problems := rt.Ready(ctx); len(problems) > 0 {
		body, status = map[string]any{statusKey: "not ready", "targets": problems}, http.StatusServiceUnavailable
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
