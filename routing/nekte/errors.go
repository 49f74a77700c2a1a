package nekte

import (
	"errors"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Errors of the task lifecycle carry human text in their message, as the NEKTE reference
// writes them ("Task not found: t-1"); task ids and capability ids are validated wire
// identifiers of at most 64 characters.

func errTaskNotFound(id string) *gateway.Error {
	return gateway.Errorf(schemas.CodeTaskNotFound, "Task not found: %s", id)
}

func errNotCancellable(id string, from nk.TaskStatus) *gateway.Error {
	return gateway.Errorf(schemas.CodeTaskNotCancellable, "Task not cancellable: %s (status %s)", id, from).
		With("status", string(from))
}

func errNotResumable(id string, from nk.TaskStatus) *gateway.Error {
	return gateway.Errorf(schemas.CodeTaskNotResumable, "Task not resumable: %s (status %s)", id, from).
		With("status", string(from))
}

func errNotSuspendable(id string, from nk.TaskStatus) *gateway.Error {
	return gateway.Errorf(schemas.CodeTaskNotResumable, "Task not suspendable: %s (status %s); only a running task can be suspended", id, from).
		With("status", string(from))
}

func errDuplicateTask(id string) *gateway.Error {
	return gateway.Errorf(schemas.CodeInvalidParams, "Task already exists: %s; task ids are unique per caller while the task's record is kept", id).
		With("field", "task.id")
}

func errCapabilityNotFound(id string) *gateway.Error {
	return gateway.Errorf(schemas.CodeCapabilityNotFound, "Capability not found: %s", id)
}

func errNoMatch() *gateway.Error {
	return gateway.Errorf(schemas.CodeCapabilityNotFound,
		"No capability matches the task description; name one in task.cap (see nekte.discover)")
}

func errTooManyTasks(limit int) *gateway.Error {
	return gateway.Errorf(schemas.CodeQuota, "Too many unfinished tasks: at most %d per caller", limit).
		With("limit", limit)
}

func errTaskTimeout(id string, ms int64) *gateway.Error {
	return gateway.Errorf(schemas.CodeTaskTimeout, "Task timed out: %s after %d ms", id, ms).
		With("layer", gateway.LayerTask).With("timeout_ms", ms)
}

func errTaskFailed(id, why string) *gateway.Error {
	return gateway.Errorf(schemas.CodeTaskFailed, "Task failed: %s: %s", id, why)
}

func errContextExpired(id string) *gateway.Error {
	return gateway.Errorf(schemas.CodeContextExpired, "Context expired: %s", id)
}

func errContextGone(id string) *gateway.Error {
	return gateway.Errorf(schemas.CodeContextExpired, "Context not available: %s (expired, revoked or never shared)", id)
}

func errForwardDenied(envelope, capID string) *gateway.Error {
	return gateway.Errorf(schemas.CodeContextPermissionDenied,
		"Context permission denied: envelope %s may not be forwarded to capability %s (forward is false and the capability is not in its scope)", envelope, capID)
}

func errDeriveDenied(id string) *gateway.Error {
	return gateway.Errorf(schemas.CodeContextPermissionDenied,
		"Context permission denied: task %s derives from a context with derive false; its result may not be re-derived", id)
}

func errVerification(id, why string) *gateway.Error {
	return gateway.Errorf(schemas.CodeVerificationFailed, "Verification failed: %s: %s", id, why)
}

func errShuttingDown() *gateway.Error { return gateway.NewError(schemas.CodeShuttingDown) }

func errBusy() *gateway.Error {
	return gateway.Errorf(schemas.CodeUnavailable, "Task record is being changed concurrently; retry").
		With("retry_after_ms", 50)
}

func errTooLarge(field string, limit int) *gateway.Error {
	return gateway.Errorf(schemas.CodeInvalidParams, "Invalid params: %s must be at most %d bytes", field, limit).
		With("field", field)
}

// paramError turns a codecs/nekte *ParamError into the gateway's error, naming the field.
func paramError(err error) error {
	if pe, ok := errors.AsType[*nk.ParamError](err); ok {
		e := gateway.Errorf(schemas.CodeInvalidParams, "Invalid params: %s", pe.Error()).With("reason", pe.Reason)
		if pe.Field != "" {
			e = e.With("field", pe.Field)
		}
		return e
	}
	return gateway.AsError(err)
}

// errStale reports that a task moved on under a writer (another process cancelled or
// suspended it, or a newer run took over): the writer stops without changing anything.
var errStale = errors.New("nekte: task record moved on")
