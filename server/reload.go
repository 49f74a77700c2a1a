package server

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/gatehouse-dev/gatehouse/demo"
	adminface "github.com/gatehouse-dev/gatehouse/faces/admin"
	"github.com/gatehouse-dev/gatehouse/routing"
)

// Reload builds a runtime for cfg beside the current one and swaps it in atomically.
// What cfg leaves unchanged is carried over (carry.go): MCP upstreams are shared, not
// restarted, gRPC backends keep their connection, breakers their state. The swap waits,
// up to server.reload.ready_timeout, until every target ready in the current runtime is
// ready in the new one; one still not ready then refuses the reload. Calls already
// running finish on the old runtime, which is closed when the last of them ends (what it
// shares with the new one stays open). If cfg cannot be built, the current runtime keeps
// serving and the error is returned.
// Listener settings cannot change without a restart; a difference is logged. The key ring
// (auth.keyring) is opened anew beside the old one, which is closed once the new one serves.
// The tracer provider is rebuilt only when the tracing section changed; the old one is
// flushed and shut down once no runtime uses it.
// Each reload counts in gatehouse_config_reloads_total, ok or refused.
func (s *Server) Reload(cfg *Config) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	err := s.reloadLocked(cfg, nil)
	s.metrics.ConfigReloaded(err == nil)
	s.reloaded(err)
	return err
}

// reloadLocked is Reload with reloadMu held; pre is what validating cfg compiled (nil:
// compile it now).
func (s *Server) reloadLocked(cfg *Config, pre *compiled) error {
	tr, err := s.tracingFor(cfg) // the current provider unless the tracing section changed
	if err != nil {
		return fmt.Errorf("building configuration: %w", err)
	}
	if s.demoLn != nil && demoOnFreePort(cfg) {
		demo.PointRoutes(cfg.Routing.GRPC, cfg.Server.DemoGRPC.Addr, s.demoLn.Addr().String())
	}
	rt, err := buildRuntime(cfg, pre, s.process(), s.cur.Load())
	if err != nil {
		tr.Drop()
		return fmt.Errorf("building configuration: %w", err)
	}
	rt.trace = tr.Hold()
	rt.pipe = newPipeline(rt)
	// The new runtime takes traffic only once what serves in the old one serves in it too
	// (routing.AwaitReady); until then the old one keeps serving.
	if err := routing.AwaitReady(context.Background(), rt.table, s.cur.Load().table, cfg.Server.Reload.ReadyTimeout, "server.reload.ready_timeout"); err != nil {
		rt.retire()
		tr.Drop()
		return fmt.Errorf("building configuration: %w", err)
	}
	ring, err := s.openKeyRing(cfg.Auth.KeyRing)
	if err != nil {
		rt.retire()
		tr.Drop()
		return fmt.Errorf("building configuration: %w", err)
	}
	if !sameListeners(cfg.Server, s.listen) {
		s.log.Warn("listener settings changed; they take effect on restart", "file", cfg.File())
	}
	if !reflect.DeepEqual(cfg.State, s.stateCfg) {
		s.log.Warn("state settings changed; they take effect on restart", "file", cfg.File())
	}
	s.setLogLevel(cfg)
	s.revocations.Configure(cfg.Auth.Revocation)
	old := s.cur.Swap(rt)
	s.swapKeyRing(ring)
	s.swapTracing(tr)
	if s.mcp != nil {
		s.mcp.Sync() // publish the new configuration's MCP catalog before the old one closes
	}
	old.retire()
	s.log.Info("configuration reloaded", "file", cfg.File())
	return nil
}

// ReloadFile loads the configuration file at path and reloads it — always, even when the
// file is unchanged, since what it refers to (.proto files, a backend's reflection) may have
// changed. An invalid file is refused (and logged) while the current configuration keeps
// serving.
func (s *Server) ReloadFile(path string) error {
	return s.reloadFile(path, true)
}

// reloadFile reloads path; unless force is set, a file whose content is unchanged since the
// last load is left alone (the watcher sees events that change nothing) and is not counted
// as a reload.
func (s *Server) reloadFile(path string, force bool) (err error) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	counted := true
	defer func() {
		if counted {
			s.metrics.ConfigReloaded(err == nil)
			s.reloaded(err)
		}
	}()
	data, err := os.ReadFile(path)
	if err != nil {
		s.log.Error("configuration reload refused", "file", path, "err", err)
		return fmt.Errorf("reading config: %w", err)
	}
	if !force && s.lastFile != nil && bytes.Equal(data, s.lastFile) {
		counted = false
		return nil
	}
	if len(bytes.TrimSpace(data)) == 0 {
		// An empty file would be a valid configuration of defaults (no auth, no routes), but
		// on a reload it is far likelier a file caught between truncate and write.
		s.log.Error("configuration reload refused: the file is empty (a write in progress?); the current configuration keeps serving", "file", path)
		return fmt.Errorf("%s: refusing to reload an empty configuration file", path)
	}
	cfg, pre, err := parse(path, data)
	if err == nil {
		s.opts.Overrides.Apply(cfg)
		err = s.reloadLocked(cfg, pre)
	}
	if err != nil {
		s.log.Error("configuration reload refused; the current configuration keeps serving", "file", path, "err", err)
		return err
	}
	s.lastFile = data
	return nil
}

// reloaded records a reload's outcome for admin.status.
func (s *Server) reloaded(err error) {
	now := time.Now
	if s.opts.Now != nil {
		now = s.opts.Now
	}
	st := &adminface.ReloadStatus{At: now().UnixMilli(), OK: err == nil}
	if err != nil {
		st.Error = err.Error()
	}
	s.lastReload.Store(st)
}

// MarkLoaded records the content of the file the server was started from, so that a
// watcher event that does not change it does not reload.
func (s *Server) MarkLoaded(path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	s.reloadMu.Lock()
	s.lastFile = data
	s.reloadMu.Unlock()
}

// watchDebounce is how long the watcher waits for a burst of file events to end.
const watchDebounce = 100 * time.Millisecond

// Watch reloads the configuration file at path whenever it changes, until ctx is done.
// Only the file itself counts: it is watched through its directory, so that editors that
// replace it and Kubernetes ConfigMap updates (the "..data" symlink swapped to a new
// folder) are seen, but events of other files in the folder are ignored — a neighbour
// written often neither delays a reload nor re-refuses an invalid file.
func (s *Server) Watch(ctx context.Context, path string) error {
	return watchFile(ctx, path, s.log, func() { _ = s.reloadFile(path, false) })
}

// watchFile calls changed, from its own goroutine, once per burst of events that may
// have changed the file at path (watchDebounce after the last), until ctx is done.
func watchFile(ctx context.Context, path string, log *slog.Logger, changed func()) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching config: %w", err)
	}
	defer func() { _ = w.Close() }()
	path = filepath.Clean(path)
	if err := w.Add(filepath.Dir(path)); err != nil {
		return fmt.Errorf("watching config: %w", err)
	}
	target := resolved(path)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Has(fsnotify.Chmod) && !ev.Has(fsnotify.Write) {
				continue
			}
			now := resolved(path)
			if concernsFile(path, ev.Name) || now != target {
				target = now
				timer.Reset(watchDebounce)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			log.Warn("config watcher", "err", err)
		case <-timer.C:
			changed()
		}
	}
}

// configMapData is the symlink a Kubernetes ConfigMap volume swaps on every update.
const configMapData = "..data"

// concernsFile reports whether an event on name, in the folder of the configuration file
// path, may change that file: an event on the file itself, or the ConfigMap's data link
// swapped.
func concernsFile(path, name string) bool {
	name = filepath.Clean(name)
	return name == path || (filepath.Dir(name) == filepath.Dir(path) && filepath.Base(name) == configMapData)
}

// resolved is path with every symlink resolved ("" when it cannot be): a file mounted
// from a ConfigMap resolves to a new folder after each update.
func resolved(path string) string {
	r, err := filepath.EvalSymlinks(path)
	if err != nil {
		return ""
	}
	return r
}

// sameListeners reports whether two server sections bind the same listeners the same way.
// The TLS files are not compared: their content is re-read while the listener serves
// (tlsconf.Source).
func sameListeners(a, b ServerConfig) bool {
	return reflect.DeepEqual(a.Boundary, b.Boundary) && reflect.DeepEqual(a.Admin, b.Admin) &&
		reflect.DeepEqual(a.Internal, b.Internal) && reflect.DeepEqual(a.DemoGRPC, b.DemoGRPC)
}
