package nekte

import "encoding/json"

// InvokeParams are the params of nekte.invoke. H is the version hash the caller cached;
// without it no hash check is made. Budget nil means DefaultBudget.
type InvokeParams struct {
	Cap    string          `json:"cap"`
	H      string          `json:"h,omitempty"`
	In     json.RawMessage `json:"in,omitempty"`
	Budget *Budget         `json:"budget,omitempty"`
}

var _ Params = (*InvokeParams)(nil)

// Validate checks cap (required, at most MaxIDLen characters), h (at most MaxHashLen)
// and the budget. The input is checked later, against the capability's schema.
func (p *InvokeParams) Validate() error {
	if err := checkString("cap", p.Cap, true, MaxIDLen); err != nil {
		return err
	}
	if err := checkString("h", p.H, false, MaxHashLen); err != nil {
		return err
	}
	return p.Budget.validate("budget")
}

// HashMismatch reports whether the caller's hash h is present and differs from the
// capability's current hash (no h: no check).
func HashMismatch(h, current string) bool { return h != "" && h != current }

// InvokeResult is the result of nekte.invoke. At level minimal, Out is a JSON string.
type InvokeResult struct {
	Out           json.RawMessage `json:"out"`
	ResolvedLevel DetailLevel     `json:"resolved_level"`
	Meta          Meta            `json:"meta"`
}

// Meta is the metadata of a result: how long it took and how many tokens it spent.
type Meta struct {
	Ms         int64 `json:"ms,omitempty"`
	TokensUsed int   `json:"tokens_used,omitempty"`
}

// VersionMismatchData is the data of a VERSION_MISMATCH error (schemas.CodeVersionMismatch):
// the current hash and the capability's L2 entry, which the reference client caches
// before retrying without h.
type VersionMismatchData struct {
	CurrentHash string    `json:"current_hash"`
	Schema      CapSchema `json:"schema"`
}
