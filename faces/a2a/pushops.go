package a2aface

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/a2a"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
)

// pushPrefix keys a task's push-notification configs in the state store: one record per
// task, the list of its configs, expiring with the task's record (a2a.task_ttl).
const pushPrefix = "a2a:push:"

// storedPush is one config as the face keeps it: the config (1.0 shape) and the version
// it was created in, which its deliveries are spelled in.
type storedPush struct {
	Config  a2a.TaskPushNotificationConfig `json:"cfg"`
	Version a2a.Version                    `json:"v"`
}

// pushStore is the tasks' configs in the state store.
type pushStore struct {
	kv  state.KV
	ttl time.Duration
}

func (x *exchange) pushStore() pushStore { return pushStore{kv: x.f.kv, ttl: x.cfg.TaskTTL} }

func (s pushStore) read(ctx context.Context, taskID string) ([]byte, []storedPush, error) {
	raw, ok, err := s.kv.Get(ctx, pushPrefix+taskID)
	if err != nil || !ok {
		return nil, nil, err
	}
	var cs []storedPush
	if json.Unmarshal(raw, &cs) != nil {
		return raw, nil, nil //nolint:nilerr // a corrupt record is replaced by the next write
	}
	return raw, cs, nil
}

func (s pushStore) list(ctx context.Context, taskID string) ([]storedPush, error) {
	_, cs, err := s.read(ctx, taskID)
	return cs, err
}

// update applies change to the task's configs under compare-and-swap.
func (s pushStore) update(ctx context.Context, taskID string, change func([]storedPush) ([]storedPush, error)) error {
	for range casAttempts {
		old, cs, err := s.read(ctx, taskID)
		if err != nil {
			return err
		}
		next, err := change(cs)
		if err != nil {
			return err
		}
		b, _ := json.Marshal(next) // strings only
		ok, err := s.kv.CompareAndSwap(ctx, pushPrefix+taskID, old, b, s.ttl)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if err := backoff(ctx); err != nil {
			return err
		}
	}
	return gateway.NewError(schemas.CodeUnavailable).With("reason", "the task's push configs are being written concurrently")
}

// pushOn returns the push section when push notifications are on: enabled, and a key ring
// to sign them.
func (x *exchange) pushOn() *PushConfig {
	if c := x.cfg.Push; c != nil && c.Enabled && x.f.ring() != nil {
		return c
	}
	return nil
}

// checkPush validates cfg against the configuration: the config's own fields, and its URL
// against the allowlist.
func (x *exchange) checkPush(cfg *a2a.TaskPushNotificationConfig, field string) *a2a.Error {
	c := x.pushOn()
	if c == nil {
		return a2a.PushNotificationNotSupported()
	}
	if e := cfg.Check(field); e != nil {
		return e
	}
	g, err := newGuard(c)
	if err != nil {
		return a2a.Errf(a2a.CodeInternal, "Internal error")
	}
	if _, err := g.checkURL(cfg.URL); err != nil {
		return a2a.InvalidParams(field, err.Error())
	}
	return nil
}

// addPush stores cfg (checked) on task r — replacing a config of the same id — and makes
// sure this process follows the task for it.
func (x *exchange) addPush(ctx context.Context, r *record, cfg a2a.TaskPushNotificationConfig) (a2a.TaskPushNotificationConfig, *a2a.Error) {
	c := x.pushOn()
	if cfg.ID == "" {
		cfg.ID = newID("push-")
	}
	cfg.TaskID, cfg.Tenant = r.ID, ""
	if a := cfg.Authentication; a != nil {
		cfg.Authentication = &a2a.AuthenticationInfo{Scheme: a.SchemeName(), Credentials: a.Credentials}
	}
	errFull := errors.New("full")
	err := x.pushStore().update(ctx, r.ID, func(cs []storedPush) ([]storedPush, error) {
		cs = slices.DeleteFunc(cs, func(s storedPush) bool { return s.Config.ID == cfg.ID })
		if len(cs) >= c.MaxConfigsPerTask {
			return nil, errFull
		}
		return append(cs, storedPush{Config: cfg, Version: x.req.Version}), nil
	})
	switch {
	case errors.Is(err, errFull):
		return cfg, fromGateway(gateway.Errorf(schemas.CodeQuota, "Too many push notification configs: at most %d per task", c.MaxConfigsPerTask).
			With("limit", "a2a.push.max_configs_per_task"))
	case err != nil:
		return cfg, fromGateway(gateway.AsError(err))
	}
	if !x.f.push.watch(x, r) {
		_ = x.pushStore().update(context.WithoutCancel(ctx), r.ID, func(cs []storedPush) ([]storedPush, error) {
			return slices.DeleteFunc(cs, func(s storedPush) bool { return s.Config.ID == cfg.ID }), nil
		})
		return cfg, fromGateway(gateway.Errorf(schemas.CodeQuota, "Too many tasks with push notifications: at most %d", c.MaxWatchedTasks).
			With("limit", "a2a.push.max_watched_tasks"))
	}
	return cfg, nil
}

// pushConfig serves the push-notification config operations: on the caller's own tasks
// only (another caller's task is TaskNotFound, as for GetTask).
func (x *exchange) pushConfig(ctx context.Context) {
	if x.pushOn() == nil {
		x.writeError(x.req.ID, a2a.PushNotificationNotSupported())
		return
	}
	taskID, configID, cfg, aerr := x.req.Push.Normalized(x.req.Op, x.req.Version)
	if aerr != nil {
		x.writeError(x.req.ID, aerr)
		return
	}
	r, err := x.store().get(ctx, x.owner, taskID)
	if err != nil {
		x.writeError(x.req.ID, x.lookupError(err, taskID))
		return
	}
	v := x.req.Version
	switch x.req.Op {
	case a2a.OpCreatePushConfig:
		field := "url"
		if v == a2a.V03 {
			field = "pushNotificationConfig.url"
		}
		if aerr := x.checkPush(&cfg, field); aerr != nil {
			x.writeError(x.req.ID, aerr)
			return
		}
		out, aerr := x.addPush(ctx, r, cfg)
		if aerr != nil {
			x.writeError(x.req.ID, aerr)
			return
		}
		x.writeValue(a2a.MarshalPushConfig(out, v))
	case a2a.OpGetPushConfig:
		cs, err := x.pushStore().list(ctx, r.ID)
		if err != nil {
			x.writeError(x.req.ID, fromGateway(gateway.AsError(err)))
			return
		}
		i := slices.IndexFunc(cs, func(s storedPush) bool { return s.Config.ID == configID || configID == "" })
		if i < 0 {
			x.writeError(x.req.ID, a2a.TaskNotFound(taskID).Info("TASK_NOT_FOUND", "pushNotificationConfigId", configID))
			return
		}
		x.writeValue(a2a.MarshalPushConfig(cs[i].Config, v))
	case a2a.OpListPushConfigs:
		cs, err := x.pushStore().list(ctx, r.ID)
		if err != nil {
			x.writeError(x.req.ID, fromGateway(gateway.AsError(err)))
			return
		}
		out := make([]a2a.TaskPushNotificationConfig, 0, len(cs))
		for _, s := range cs {
			out = append(out, s.Config)
		}
		x.writeValue(a2a.MarshalPushConfigs(out, "", v))
	case a2a.OpDeletePushConfig:
		err := x.pushStore().update(ctx, r.ID, func(cs []storedPush) ([]storedPush, error) {
			return slices.DeleteFunc(cs, func(s storedPush) bool { return s.Config.ID == configID }), nil
		})
		if err != nil {
			x.writeError(x.req.ID, fromGateway(gateway.AsError(err)))
			return
		}
		if v == a2a.V03 {
			x.writeResult([]byte("null"))
		} else {
			x.writeResult([]byte("{}"))
		}
	}
}

// writeValue answers with b, or an internal error when it could not be written.
func (x *exchange) writeValue(b []byte, err error) {
	if err != nil {
		x.writeError(x.req.ID, a2a.Errf(a2a.CodeInternal, "Internal error"))
		return
	}
	x.writeResult(b)
}
