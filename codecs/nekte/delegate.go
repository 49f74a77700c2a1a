package nekte

// DelegateParams are the params of nekte.delegate. The response is an event stream
// (see Event).
type DelegateParams struct {
	Task    Task      `json:"task"`
	Context *Envelope `json:"context,omitempty"`
}

// Task is a delegated task. It names no capability. TimeoutMs zero means no timeout of
// the caller's own; Budget nil means DefaultBudget.
type Task struct {
	ID        string  `json:"id"`
	Desc      string  `json:"desc"`
	TimeoutMs int64   `json:"timeout_ms"`
	Budget    *Budget `json:"budget,omitempty"`
}

var _ Params = (*DelegateParams)(nil)

// Validate checks the task (id required and at most MaxIDLen characters, desc at most
// MaxTaskDescLen, timeout_ms not negative, budget) and the context envelope, whose id is
// optional here.
func (p *DelegateParams) Validate() error {
	t := &p.Task
	if err := checkString("task.id", t.ID, true, MaxIDLen); err != nil {
		return err
	}
	if err := checkString("task.desc", t.Desc, false, MaxTaskDescLen); err != nil {
		return err
	}
	if t.TimeoutMs < 0 {
		return &ParamError{Field: "task.timeout_ms", Reason: reasonNegative}
	}
	if err := t.Budget.validate("task.budget"); err != nil {
		return err
	}
	if p.Context != nil {
		return p.Context.validate("context", false)
	}
	return nil
}
