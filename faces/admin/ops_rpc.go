package admin

import (
	"context"
	"encoding/json"
	"slices"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/gateway/adminparams"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/routing/nekte"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// The operator methods of the admin JSON-RPC API (ops.go). Each requires
// server.admin.operator_scope.
const (
	MethodStatus       = "admin.status"
	MethodBackends     = "admin.backends"
	MethodCatalog      = "admin.catalog"
	MethodTasksList    = "admin.tasks.list"
	MethodTasksCancel  = "admin.tasks.cancel"
	MethodTasksResume  = "admin.tasks.resume"
	MethodErrorsRecent = "admin.errors.recent"
	MethodConfigReload = "admin.config.reload"
)

// IsOperatorMethod reports whether method is one of the operator methods.
func IsOperatorMethod(method string) bool {
	switch method {
	case MethodStatus, MethodBackends, MethodCatalog, MethodTasksList, MethodTasksCancel, MethodTasksResume,
		MethodErrorsRecent, MethodConfigReload:
		return true
	}
	return false
}

// operatorCall serves the operator methods for one admin caller.
type operatorCall struct {
	ops       Operations
	principal gateway.Principal
}

// BackendsResult is the result of admin.backends.
type BackendsResult struct {
	// BucketMs is the width of one sample (ms).
	BucketMs int64     `json:"bucket_ms"`
	Backends []Backend `json:"backends"`
	// Series are the samples of every backend that had calls in the window, by name.
	Series []observability.Series `json:"series"`
}

// TasksResult is the result of admin.tasks.list.
type TasksResult struct {
	Tasks []nekte.TaskView `json:"tasks"`
}

// ErrorsResult is the result of admin.errors.recent.
type ErrorsResult struct {
	Errors []observability.RecentError `json:"errors"`
	// JaegerURL is the Jaeger UI the console links trace ids to, "" when none.
	JaegerURL string `json:"jaeger_url,omitempty"`
}

// ReloadResult is the result of admin.config.reload.
type ReloadResult struct {
	OK     bool         `json:"ok"`
	Config ConfigStatus `json:"config"`
}

// run answers one operator request (IsOperatorMethod) with its result's JSON.
func (oc *operatorCall) run(ctx context.Context, method string, params []byte) ([]byte, error) {
	if oc.ops == nil {
		return nil, gateway.Errorf(schemas.CodeMethodNotFound, "Method not found")
	}
	if scope := oc.ops.OperatorScope(); !slices.Contains(oc.principal.Scopes, scope) {
		return nil, gateway.NewError(schemas.CodeInsufficientScope).With("missing_scopes", []string{scope})
	}
	v, err := oc.answer(ctx, method, params)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func (oc *operatorCall) answer(ctx context.Context, method string, params []byte) (any, error) {
	switch method {
	case MethodStatus:
		if _, err := adminparams.Object(params); err != nil {
			return nil, err
		}
		return oc.ops.Status(), nil
	case MethodBackends:
		if _, err := adminparams.Object(params); err != nil {
			return nil, err
		}
		w := oc.ops.Window()
		return BackendsResult{BucketMs: w.BucketWidth().Milliseconds(), Backends: oc.ops.Backends(ctx), Series: orEmpty(w.Series())}, nil
	case MethodCatalog:
		return oc.catalog(params)
	case MethodTasksList, MethodTasksCancel, MethodTasksResume:
		return oc.tasks(ctx, method, params)
	case MethodErrorsRecent:
		p, err := adminparams.Object(params, "code", "limit")
		if err != nil {
			return nil, err
		}
		var code schemas.Code
		var limit int
		if err := adminparams.Optional(p, "code", &code, "must be an integer"); err != nil {
			return nil, err
		}
		if err := adminparams.Optional(p, "limit", &limit, "must be a non-negative integer"); err != nil || limit < 0 {
			return nil, cmpErr(err, adminparams.Invalid("limit", "must be a non-negative integer"))
		}
		return ErrorsResult{Errors: orEmpty(oc.ops.Window().RecentErrors(code, limit)), JaegerURL: oc.ops.Console().JaegerURL}, nil
	default: // MethodConfigReload
		if _, err := adminparams.Object(params); err != nil {
			return nil, err
		}
		if err := oc.ops.ReloadConfig(); err != nil {
			return nil, gateway.Errorf(schemas.CodeInvalidParams, "Configuration reload refused; the current configuration keeps serving").
				With("reason", "reload_refused").With("error", err.Error())
		}
		return ReloadResult{OK: true, Config: oc.ops.Status().Config}, nil
	}
}

// catalog serves admin.catalog {level?, subject?, scopes?}: with subject or scopes, the
// catalog as a caller with them sees it on the boundary.
func (oc *operatorCall) catalog(params []byte) (any, error) {
	p, err := adminparams.Object(params, "level", "subject", "scopes")
	if err != nil {
		return nil, err
	}
	level := nk.LevelSchema
	if err := adminparams.Optional(p, "level", &level, "must be 0, 1 or 2"); err != nil || level < 0 || level > 2 {
		return nil, cmpErr(err, adminparams.Invalid("level", "must be 0, 1 or 2"))
	}
	var as *gateway.Principal
	if _, s := p["subject"]; s || p["scopes"] != nil {
		as = &gateway.Principal{}
		if err := adminparams.Optional(p, "subject", &as.Subject, "must be a string"); err != nil {
			return nil, err
		}
		if err := adminparams.Optional(p, "scopes", &as.Scopes, "must be an array of strings"); err != nil {
			return nil, err
		}
	}
	return oc.ops.Catalog(level, as)
}

// tasks serves admin.tasks.list {status?}, admin.tasks.cancel {task_id, reason?} and
// admin.tasks.resume {task_id}.
func (oc *operatorCall) tasks(ctx context.Context, method string, params []byte) (any, error) {
	t := oc.ops.Tasks()
	if t == nil {
		return nil, gateway.Errorf(schemas.CodeMethodNotFound, "NEKTE is not enabled")
	}
	if method == MethodTasksList {
		p, err := adminparams.Object(params, "status")
		if err != nil {
			return nil, err
		}
		var status string
		if err := adminparams.Optional(p, "status", &status, "must be a task status"); err != nil {
			return nil, err
		}
		list, err := t.OperatorTasks(ctx, nk.TaskStatus(status))
		if err != nil {
			return nil, gateway.AsError(err)
		}
		return TasksResult{Tasks: list}, nil
	}
	allowed := []string{"task_id"}
	if method == MethodTasksCancel {
		allowed = append(allowed, "reason")
	}
	p, err := adminparams.Object(params, allowed...)
	if err != nil {
		return nil, err
	}
	var id, reason string
	if json.Unmarshal(p["task_id"], &id) != nil || id == "" {
		return nil, adminparams.Invalid("task_id", "must be a non-empty string")
	}
	if err := adminparams.Optional(p, "reason", &reason, "must be a string"); err != nil {
		return nil, err
	}
	var res nk.TaskLifecycleResult
	if method == MethodTasksCancel {
		res, err = t.OperatorCancel(ctx, id, reason)
	} else {
		res, err = t.OperatorResume(ctx, id)
	}
	if err != nil {
		return nil, gateway.AsError(err)
	}
	return res, nil
}

// cmpErr returns err when set, else fallback.
func cmpErr(err error, fallback *gateway.Error) error {
	if err != nil {
		return err
	}
	return fallback
}

// orEmpty returns s, or an empty slice for nil, so that JSON shows [] rather than null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
