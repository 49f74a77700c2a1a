package nekte

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf16"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
)

// The methods this package adds to NEKTE's. Both take {task_id}.
const (
	// MethodTaskStream re-attaches to a task's event stream: the recorded events, then
	// the live ones.
	MethodTaskStream = "nekte.task.stream"
	// MethodTaskSuspend suspends a running task with a checkpoint.
	MethodTaskSuspend = "nekte.task.suspend"
)

// delegateParams are nekte.delegate's params with the additive fields task.cap, task.in
// and context.scope. Validation is codecs/nekte's, plus those fields.
type delegateParams struct {
	Task    delegateTask `json:"task"`
	Context *envelope    `json:"context,omitempty"`
}

// delegateTask is a task with the capability it runs (cap) and that capability's input
// (in), both optional: a reference client sends only desc.
type delegateTask struct {
	ID        string          `json:"id"`
	Desc      string          `json:"desc"`
	TimeoutMs int64           `json:"timeout_ms"`
	Budget    *nk.Budget      `json:"budget,omitempty"`
	Cap       string          `json:"cap,omitempty"`
	In        json.RawMessage `json:"in,omitempty"`
}

// envelope is a context envelope with the scope the primitives document gives it: the
// capability ids it may be passed to when forward is false.
type envelope struct {
	ID          string          `json:"id"`
	Data        json.RawMessage `json:"data,omitempty"`
	Compression nk.Compression  `json:"compression,omitempty"`
	Permissions nk.Permissions  `json:"permissions"`
	TTLSeconds  int64           `json:"ttl_s"`
	BudgetHint  int             `json:"budget_hint,omitempty"`
	Scope       []string        `json:"scope,omitempty"`
}

func (e *envelope) wire() *nk.Envelope {
	if e == nil {
		return nil
	}
	return &nk.Envelope{
		ID: e.ID, Data: e.Data, Compression: e.Compression, Permissions: e.Permissions,
		TTLSeconds: e.TTLSeconds, BudgetHint: e.BudgetHint,
	}
}

// mayReach reports whether the envelope may be passed to capability id: always when
// forward is true, else only to the capabilities of its scope.
func (e *envelope) mayReach(id string) bool {
	return e.Permissions.Forward || slices.Contains(e.Scope, id)
}

// idLen returns the length of s in UTF-16 code units, as the NEKTE validator counts it.
func idLen(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

func checkScope(field string, scope []string) error {
	for i, s := range scope {
		if s == "" || idLen(s) > nk.MaxIDLen {
			return &nk.ParamError{Field: field + "[" + strconv.Itoa(i) + "]", Reason: "must be a capability id of 1 to 64 characters"}
		}
	}
	return nil
}

var _ nk.Params = (*delegateParams)(nil)

// Validate checks the params as codecs/nekte does, then cap (at most 64 characters), in
// (valid JSON) and the context's scope.
func (p *delegateParams) Validate() error {
	t := &p.Task
	base := nk.DelegateParams{
		Task:    nk.Task{ID: t.ID, Desc: t.Desc, TimeoutMs: t.TimeoutMs, Budget: t.Budget},
		Context: p.Context.wire(),
	}
	if err := base.Validate(); err != nil {
		return err
	}
	if idLen(t.Cap) > nk.MaxIDLen {
		return &nk.ParamError{Field: "task.cap", Reason: "must be at most 64 characters"}
	}
	if len(t.In) > 0 && !json.Valid(t.In) {
		return &nk.ParamError{Field: "task.in", Reason: "must be valid JSON"}
	}
	if p.Context != nil {
		return checkScope("context.scope", p.Context.Scope)
	}
	return nil
}

// contextParams are nekte.context's params with the envelope's scope.
type contextParams struct {
	Action   nk.ContextAction `json:"action"`
	Envelope envelope         `json:"envelope"`
}

var _ nk.Params = (*contextParams)(nil)

// Validate checks the params as codecs/nekte does, and the scope.
func (p *contextParams) Validate() error {
	base := nk.ContextParams{Action: p.Action, Envelope: *p.Envelope.wire()}
	if err := base.Validate(); err != nil {
		return err
	}
	return checkScope("envelope.scope", p.Envelope.Scope)
}

// verifyParams are nekte.verify's params with result_hash, the primitives document's
// member: the hex SHA-256 of the canonical JSON of the task's full output, which the hash
// check compares with the receipt.
type verifyParams struct {
	TaskID     string     `json:"task_id"`
	Checks     []nk.Check `json:"checks"`
	Budget     *nk.Budget `json:"budget,omitempty"`
	ResultHash string     `json:"result_hash,omitempty"`
}

var _ nk.Params = (*verifyParams)(nil)

// Validate checks the params as codecs/nekte does, and result_hash (64 hex digits).
func (p *verifyParams) Validate() error {
	base := nk.VerifyParams{TaskID: p.TaskID, Checks: p.Checks, Budget: p.Budget}
	if err := base.Validate(); err != nil {
		return err
	}
	if p.ResultHash != "" && !isHexDigest(p.ResultHash) {
		return &nk.ParamError{Field: "result_hash", Reason: "must be the 64 hex digits of a SHA-256"}
	}
	return nil
}

func isHexDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') && (c < 'A' || c > 'F') {
			return false
		}
	}
	return true
}

// taskRefParams are the params of nekte.task.stream and nekte.task.suspend.
type taskRefParams struct {
	TaskID string `json:"task_id"`
}

var _ nk.Params = (*taskRefParams)(nil)

// Validate checks task_id as nekte.task.status does.
func (p *taskRefParams) Validate() error {
	return (&nk.TaskStatusParams{TaskID: p.TaskID}).Validate()
}
