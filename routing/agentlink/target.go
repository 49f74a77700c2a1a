package agentlink

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Reserved members of a call's params: the target takes them out before the input is
// checked against the operator's schema and sent to an agent.
const (
	// ParamDataRefs is an array of DataRefs ({uri, name, size_bytes, sha256, media_type,
	// offset, length}) passed to the task by reference.
	ParamDataRefs = "data_refs"
	// ParamAffinityKey is a string: tasks with the same key go to the same agent while it
	// is connected and has room.
	ParamAffinityKey = "affinity_key"
	// ParamJobID is a string: the job the task belongs to, which scopes its id (default:
	// a job of its own).
	ParamJobID = "job_id"
	// ParamRedundancy is an integer k: run the task on k distinct agents and return every
	// run (default 1: one agent, the plain result).
	ParamRedundancy = "redundancy"
)

// Target routes the methods "<namespace><operator>" to the agents offering the operator.
// Its calls are never retried by the gateway (gateway.Unretryable): a task may have run
// even when its outcome is a failure.
type Target struct{ hub *Hub }

// Target returns the hub's target; route the namespace prefix to it.
func (h *Hub) Target() *Target { return &Target{hub: h} }

// Hub returns the hub the target dispatches to.
func (t *Target) Hub() *Hub { return t.hub }

// Name implements gateway.Target.
func (t *Target) Name() string { return "agents" }

// Namespace returns the method prefix the target serves.
func (t *Target) Namespace() string { return t.hub.cfg.Namespace }

// NotRetryable implements gateway.Unretryable: no call to an agent is retried.
func (t *Target) NotRetryable(*gateway.Call) bool { return true }

// Backend implements gateway.Backended: each operator is a backend of its own (its breaker,
// admission queue), named by its method.
func (t *Target) Backend(call *gateway.Call) string { return call.Method }

// Invoke implements gateway.Target: it dispatches the call's params as the input of the
// operator its method names and returns {task_id, job_id, agent, output, data_refs?,
// diagnostics?, receipt?}.
func (t *Target) Invoke(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
	op, ok := strings.CutPrefix(call.Method, t.hub.cfg.Namespace)
	if !ok || op == "" {
		return nil, gateway.NewError(schemas.CodeMethodNotFound)
	}
	task, k, err := taskOf(op, call.Params)
	if err != nil {
		return nil, err
	}
	task.Progress = gateway.ProgressFrom(ctx)
	if k > 1 {
		return t.invokeRedundant(ctx, call, task, k)
	}
	out, err := t.hub.Dispatch(ctx, task)
	if err != nil {
		if agent, ok := gateway.AsError(err).Data()["agent"].(string); ok {
			call.ServedBy = agent
		}
		return nil, err
	}
	call.ServedBy = out.Agent
	v, err := json.Marshal(out)
	if err != nil {
		return nil, gateway.NewError(schemas.CodeInternal).Wrap(err)
	}
	return gateway.NewResult(v), nil
}

var _ gateway.Target = (*Target)(nil)
var _ gateway.Unretryable = (*Target)(nil)
var _ gateway.Backended = (*Target)(nil)

// taskOf builds the task of a call: params (an object; absent is {}) less the reserved
// members, which set its refs, affinity key, job id and redundancy (k, 1 when absent).
func taskOf(op string, params []byte) (Task, int, error) {
	task, k := Task{Operator: op}, 1
	err := splitParams(&task, &k, params)
	return task, k, err
}

func splitParams(task *Task, k *int, params []byte) error {
	op := task.Operator
	in := bytes.TrimSpace(params)
	if len(in) == 0 || bytes.Equal(in, []byte("null")) {
		task.Input = json.RawMessage(`{}`)
		return nil
	}
	if in[0] != '{' {
		return gateway.NewError(schemas.CodeInvalidParams).With("operator", op).With("reason", "params must be an object: the operator's input")
	}
	if !mayHoldReserved(in) {
		task.Input = json.RawMessage(bytes.Clone(in))
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(in, &m); err != nil {
		return gateway.NewError(schemas.CodeInvalidParams).With("operator", op).With("reason", "params are not a JSON object")
	}
	bad := func(member, reason string) error {
		return gateway.NewError(schemas.CodeInvalidParams).With("operator", op).With("field", member).With("reason", reason)
	}
	if raw, ok := m[ParamDataRefs]; ok {
		if err := json.Unmarshal(raw, &task.Refs); err != nil || len(task.Refs) > maxRefs {
			return bad(ParamDataRefs, "must be an array of at most 64 data refs {uri, name, size_bytes, sha256, media_type, offset, length}")
		}
		for _, r := range task.Refs {
			if r.URI == "" || len(r.URI) > maxURILen {
				return bad(ParamDataRefs, "every data ref needs a uri of at most 4096 bytes")
			}
		}
		delete(m, ParamDataRefs)
	}
	for member, dst := range map[string]*string{ParamAffinityKey: &task.AffinityKey, ParamJobID: &task.JobID} {
		raw, ok := m[member]
		if !ok {
			continue
		}
		if err := json.Unmarshal(raw, dst); err != nil || len(*dst) > maxTaskIDLen/2 || (member == ParamJobID && *dst != "" && !validAgentID(*dst)) {
			return bad(member, "must be a string of at most 64 characters (a job id: A–Z a–z 0–9 . _ -)")
		}
		delete(m, member)
	}
	if raw, ok := m[ParamRedundancy]; ok {
		if err := json.Unmarshal(raw, k); err != nil || *k < 1 || *k > MaxRedundancy {
			return bad(ParamRedundancy, "must be an integer from 1 to 16")
		}
		delete(m, ParamRedundancy)
	}
	v, err := json.Marshal(m)
	if err != nil {
		return gateway.NewError(schemas.CodeInternal).Wrap(err)
	}
	task.Input = v
	return nil
}

// mayHoldReserved reports whether params may hold a reserved member (a cheap test that
// spares the common call a decode).
func mayHoldReserved(in []byte) bool {
	for _, name := range []string{ParamDataRefs, ParamAffinityKey, ParamJobID, ParamRedundancy} {
		if bytes.Contains(in, []byte(`"`+name+`"`)) {
			return true
		}
	}
	return false
}

// invokeRedundant runs task on k agents and returns {job_id, runs: [{agent, task_id,
// output, …} | {agent, error: {code, message, data}}]}.
func (t *Target) invokeRedundant(ctx context.Context, call *gateway.Call, task Task, k int) (*gateway.Result, error) {
	if task.JobID == "" {
		task.JobID = newJobID()
	}
	runs, err := t.hub.DispatchRedundant(ctx, task, k)
	if err != nil {
		return nil, err
	}
	type runError struct {
		Code    schemas.Code   `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data,omitempty"`
	}
	type run struct {
		*Outcome
		Agent string    `json:"agent"`
		Error *runError `json:"error,omitempty"`
	}
	out := struct {
		JobID string `json:"job_id"`
		Runs  []run  `json:"runs"`
	}{JobID: task.JobID}
	agents := make([]string, 0, len(runs))
	for _, r := range runs {
		agents = append(agents, r.Agent)
		x := run{Outcome: r.Outcome, Agent: r.Agent}
		if r.Err != nil {
			ge := gateway.AsError(r.Err)
			x.Error = &runError{Code: ge.Code(), Message: ge.Message(), Data: ge.Data()}
		}
		out.Runs = append(out.Runs, x)
	}
	call.ServedBy = strings.Join(agents, ",")
	call.ServedBy = strings.Join(agents, ",")
	v, err := json.Marshal(out)
	if err != nil {
		return nil, gateway.NewError(schemas.CodeInternal).Wrap(err)
	}
	return gateway.NewResult(v), nil
}
