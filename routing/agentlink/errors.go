package agentlink

import (
	"errors"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend/inputschema"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Recovery hints of the agent link's errors (error.data.recovery_hint). Recovery belongs to
// the caller: the gateway never retries a task by itself.
const (
	// HintTryAnotherAgent: the agent refused the task; calling again may reach another one.
	HintTryAnotherAgent = "CALL_AGAIN_ANOTHER_AGENT_MAY_ACCEPT"
	// HintCheckDiagnostics: the task ran and failed; data.diagnostics says why.
	HintCheckDiagnostics = "READ_DIAGNOSTICS_FIX_INPUT"
	// HintLongerTimeout: the task did not finish in time; call again with a later deadline.
	HintLongerTimeout = "CALL_AGAIN_WITH_LATER_DEADLINE"
	// HintAgentGone: the agent went away mid-task; the task may or may not have run.
	HintAgentGone = "CALL_AGAIN_IF_IDEMPOTENT"
	// HintWaitForAgent: no connected agent offers the operator.
	HintWaitForAgent = "WAIT_FOR_AN_AGENT_THEN_DISCOVER"
	// HintBusy: every agent offering the operator is at its concurrency limit.
	HintBusy = "RETRY_WITH_BACKOFF"
)

// taskError builds an error of the agent link with the task's identity.
func taskError(code schemas.Code, t *task, hint string) *gateway.Error {
	e := gateway.NewError(code).With("operator", t.op).With("task_id", t.id).With("job_id", t.job).With("recovery_hint", hint)
	if t.agent != nil {
		e = e.With("agent", t.agent.id)
	}
	return e
}

func errRejected(t *task, reason string) *gateway.Error {
	return taskError(schemas.CodeAgentRejected, t, HintTryAnotherAgent).With("reason", reason)
}

func errFailed(t *task, diagnostics string) *gateway.Error {
	return taskError(schemas.CodeAgentTaskFailed, t, HintCheckDiagnostics).With("diagnostics", diagnostics)
}

func errTimeout(t *task, timeoutMs int64) *gateway.Error {
	return taskError(schemas.CodeAgentTimeout, t, HintLongerTimeout).With("timeout_ms", timeoutMs)
}

func errGone(t *task, reason string) *gateway.Error {
	return taskError(schemas.CodeAgentGone, t, HintAgentGone).With("reason", reason)
}

func errNoAgent(op string) *gateway.Error {
	return gateway.NewError(schemas.CodeNoAgent).With("operator", op).With("recovery_hint", HintWaitForAgent)
}

func errBusy(op string, retryAfterMs int64) *gateway.Error {
	return gateway.NewError(schemas.CodeOverloaded).With("reason", "agents_busy").With("operator", op).
		With("retry_after_ms", retryAfterMs).With("recovery_hint", HintBusy)
}

// errInvalidInput is INVALID_PARAMS for an input the operator's schema refuses, shaped as
// the MCP bridge shapes a tool's (data: operator, path, keyword, reason, errors), wrapping
// the *inputschema.Error so the capability layer describes it in NEKTE's notation.
func errInvalidInput(op string, err error) *gateway.Error {
	ie, ok := errors.AsType[*inputschema.Error](err)
	if !ok {
		return gateway.NewError(schemas.CodeInvalidParams).With("operator", op).Wrap(err)
	}
	list := make([]map[string]string, 0, len(ie.Violations))
	for _, v := range ie.Violations {
		list = append(list, map[string]string{"path": v.Pointer(), "keyword": v.Keyword, "reason": v.Reason})
	}
	first := ie.Violations[0]
	e := gateway.NewError(schemas.CodeInvalidParams).With("operator", op).
		With("path", first.Pointer()).With("keyword", first.Keyword).With("reason", first.Reason).With("errors", list)
	if ie.More > 0 {
		e = e.With("more", ie.More)
	}
	return e.Wrap(ie)
}
