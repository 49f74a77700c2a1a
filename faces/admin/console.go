package admin

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// consoleAssets are the console's page, script and style sheet: served from the binary,
// nothing from elsewhere (no CDN), so the console works offline.
//
//go:embed console/index.html console/app.js console/app.css
var consoleAssets embed.FS

// consoleCSP is the console's Content-Security-Policy: no inline script or style, nothing
// from another origin, no framing, no <base>, forms only to the console itself.
const consoleCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// consoleWriteWindow is how long one write of an event stream may take; the admin
// listener's write timeout would otherwise end every stream after its first seconds.
const consoleWriteWindow = 10 * time.Second

// console serves the operator console: the page (GET /console), its assets (GET
// /console/assets/…) and its live updates (GET /console/events).
type console struct {
	f       *Face
	cfg     ConsoleConfig
	streams atomic.Int64 // event streams open
}

// routeConsole serves the console when the gateway has the operator methods and
// server.admin.console.enabled is set; otherwise its paths answer 404 like any unknown
// path.
func (f *Face) routeConsole() {
	if f.ops == nil {
		return
	}
	cfg := f.ops.Console()
	if !cfg.Enabled {
		return
	}
	c := &console{f: f, cfg: cfg.WithDefaults()}
	f.console = c
	f.mux.HandleFunc("GET /console", c.page)
	f.mux.HandleFunc("GET /console/assets/{name}", c.asset)
	f.mux.HandleFunc("GET /console/events", c.events)
}

// secure sets the headers every console response carries.
func secure(h http.Header) {
	h.Set("Content-Security-Policy", consoleCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
}

// page serves the console's HTML; it holds no data, which the script fetches with the
// operator's credential.
func (c *console) page(w http.ResponseWriter, _ *http.Request) {
	c.serveFile(w, "index.html", "text/html; charset=utf-8")
}

// assetTypes are the console's assets and their content types.
var assetTypes = map[string]string{
	"app.js":  "text/javascript; charset=utf-8",
	"app.css": "text/css; charset=utf-8",
}

func (c *console) asset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	ct, ok := assetTypes[name]
	if !ok {
		secure(w.Header())
		http.NotFound(w, r)
		return
	}
	c.serveFile(w, name, ct)
}

func (c *console) serveFile(w http.ResponseWriter, name, contentType string) {
	b, err := consoleAssets.ReadFile("console/" + name)
	secure(w.Header())
	if err != nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", contentType)
	_, _ = w.Write(b) //nolint:gosec // an embedded asset of the binary, served with its own content type and nosniff
}

// Snapshot is one event of /console/events: what the console shows, as the operator
// methods report it. Each part the caller may not read, or that cannot be read now, is
// left out and named in Errors.
type Snapshot struct {
	At       int64          `json:"at"`
	Status   *Status        `json:"status,omitempty"`
	Backends BackendsResult `json:"backends"`
	Tasks    *TasksResult   `json:"tasks,omitempty"`
	Recent   ErrorsResult   `json:"recent"`
	// Errors names the parts left out and why.
	Errors map[string]string `json:"errors,omitempty"`
}

// events serves GET /console/events: a text/event-stream of "snapshot" events every
// events_interval, for a caller authenticated in zone operator (the credential in the
// Authorization or X-API-Key header, as on POST /rpc — the console reads the stream with
// fetch, never with a credential in the URL) holding server.admin.operator_scope. The
// credential is checked again before every event, so a revoked key or an expired token
// ends the stream. At most max_event_streams streams are open at once (503 past it);
// streams end when the gateway drains.
func (c *console) events(w http.ResponseWriter, r *http.Request) {
	secure(w.Header())
	traceID := observability.NewTraceID()
	w.Header().Set("X-Trace-Id", traceID)
	creds := faces.HTTPCredentials(r, gateway.ZoneOperator)
	if err := c.authorize(r.Context(), creds); err != nil {
		faces.WriteChallenge(w, err, traceID, faces.EncodingJSON, "")
		return
	}
	if n := c.streams.Add(1); n > int64(c.cfg.MaxEventStreams) {
		c.streams.Add(-1)
		faces.WriteHTTPError(w, http.StatusServiceUnavailable,
			gateway.Errorf(schemas.CodeOverloaded, "Too many console event streams").With("max_event_streams", c.cfg.MaxEventStreams),
			traceID, faces.EncodingJSON)
		return
	}
	defer c.streams.Add(-1)
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	t := time.NewTicker(c.cfg.EventsInterval)
	defer t.Stop()
	for {
		if err := c.send(r.Context(), w, rc); err != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
		if c.f.gw.Draining() {
			return
		}
		if err := c.authorize(r.Context(), creds); err != nil {
			_ = c.write(w, rc, "denied", fmt.Appendf(nil, "%q", err.Error()))
			return
		}
	}
}

// authorize authenticates creds with the configuration in force and checks the operator
// scope; the error is a *gateway.Error for the caller.
func (c *console) authorize(ctx context.Context, creds gateway.Credentials) *gateway.Error {
	rt := c.f.gw.Acquire()
	defer rt.Release()
	p, err := rt.Authenticator().Authenticate(ctx, creds)
	if err != nil {
		return gateway.AsError(err)
	}
	if scope := c.f.ops.OperatorScope(); !slices.Contains(p.Scopes, scope) {
		return gateway.NewError(schemas.CodeInsufficientScope).With("missing_scopes", []string{scope})
	}
	return nil
}

// send writes one snapshot.
func (c *console) send(ctx context.Context, w http.ResponseWriter, rc *http.ResponseController) error {
	b, err := json.Marshal(c.snapshot(ctx))
	if err != nil {
		return err
	}
	return c.write(w, rc, "snapshot", b)
}

func (c *console) write(w http.ResponseWriter, rc *http.ResponseController, event string, data []byte) error {
	if err := rc.SetWriteDeadline(time.Now().Add(consoleWriteWindow)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	//nolint:gosec // a JSON snapshot encoded here, served as text/event-stream with nosniff
	if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data); err != nil {
		return err
	}
	return rc.Flush()
}

// snapshot reads what the console shows.
func (c *console) snapshot(ctx context.Context) Snapshot {
	ops := c.f.ops
	st := ops.Status()
	win := ops.Window()
	s := Snapshot{
		At:       time.Now().UnixMilli(),
		Status:   &st,
		Backends: BackendsResult{BucketMs: win.BucketWidth().Milliseconds(), Backends: ops.Backends(ctx), Series: orEmpty(win.Series())},
		Recent:   ErrorsResult{Errors: orEmpty(win.RecentErrors(0, 50)), JaegerURL: c.cfg.JaegerURL},
	}
	if t := ops.Tasks(); t != nil {
		list, err := t.OperatorTasks(ctx, "")
		if err != nil {
			s.Errors = map[string]string{"tasks": err.Error()}
		} else {
			s.Tasks = &TasksResult{Tasks: list}
		}
	}
	return s
}
