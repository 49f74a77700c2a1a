package nekte

import (
	"encoding/json"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonnames"
)

// Check is a kind of verification nekte.verify can run.
type Check string

// The checks.
const (
	CheckHash   Check = "hash"
	CheckSample Check = "sample"
	CheckSource Check = "source"
)

// VerifyParams are the params of nekte.verify.
type VerifyParams struct {
	TaskID string  `json:"task_id"`
	Checks []Check `json:"checks"`
	Budget *Budget `json:"budget,omitempty"`
}

var _ Params = (*VerifyParams)(nil)

// Validate checks task_id (required, at most MaxIDLen characters), checks (at least one,
// each hash, sample or source) and the budget.
func (p *VerifyParams) Validate() error {
	if err := checkString("task_id", p.TaskID, true, MaxIDLen); err != nil {
		return err
	}
	if len(p.Checks) == 0 {
		return &ParamError{Field: "checks", Reason: "must name at least one check"}
	}
	for i, c := range p.Checks {
		if c != CheckHash && c != CheckSample && c != CheckSource {
			return &ParamError{Field: jsonnames.Index("checks", i), Reason: `must be "hash", "sample" or "source"`}
		}
	}
	return p.Budget.validate("budget")
}

// VerifyStatusVerified is the status of a verification that passed.
const VerifyStatusVerified = "verified"

// VerifyResult is the result of nekte.verify: the checks run and what each found.
type VerifyResult struct {
	TaskID    string          `json:"task_id"`
	Checks    []Check         `json:"checks"`
	Status    string          `json:"status"`
	Hash      string          `json:"hash,omitempty"`
	HashValid *bool           `json:"hash_valid,omitempty"`
	Sample    json.RawMessage `json:"sample,omitempty"`
	Source    json.RawMessage `json:"source,omitempty"`
}
