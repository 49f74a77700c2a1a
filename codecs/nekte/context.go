package nekte

import (
	"encoding/json"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonnames"
)

// ContextAction is what a nekte.context call does with its envelope.
type ContextAction string

// The context actions.
const (
	ActionShare   ContextAction = "share"
	ActionRequest ContextAction = "request"
	ActionRevoke  ContextAction = "revoke"
)

// Compression says how an envelope's data is compressed.
type Compression string

// The compressions; an absent compression means none.
const (
	CompressionNone      Compression = "none"
	CompressionSemantic  Compression = "semantic"
	CompressionReference Compression = "reference"
)

// ContextParams are the params of nekte.context. For request and revoke only the
// envelope's id matters.
type ContextParams struct {
	Action   ContextAction `json:"action"`
	Envelope Envelope      `json:"envelope"`
}

// Envelope is a context envelope: data shared with explicit permissions and a lifetime.
// TTLSeconds zero leaves the lifetime to the server; BudgetHint zero gives none.
type Envelope struct {
	ID          string          `json:"id"`
	Data        json.RawMessage `json:"data,omitempty"`
	Compression Compression     `json:"compression,omitempty"`
	Permissions Permissions     `json:"permissions"`
	TTLSeconds  int64           `json:"ttl_s"`
	BudgetHint  int             `json:"budget_hint,omitempty"`
}

// Permissions say what a receiver may do with an envelope's data. The zero value — the
// reading of absent permissions — allows nothing.
type Permissions struct {
	Forward bool `json:"forward"`
	Persist bool `json:"persist"`
	Derive  bool `json:"derive"`
}

var _ Params = (*ContextParams)(nil)

// Validate checks the action (share, request or revoke) and the envelope: id required
// and at most MaxIDLen characters; for share also the compression, ttl_s and budget_hint
// not negative, and data valid JSON.
func (p *ContextParams) Validate() error {
	switch p.Action {
	case ActionShare:
		return p.Envelope.validate("envelope", true)
	case ActionRequest, ActionRevoke:
		return checkString("envelope.id", p.Envelope.ID, true, MaxIDLen)
	default:
		return &ParamError{Field: "action", Reason: `must be "share", "request" or "revoke"`}
	}
}

func (e *Envelope) validate(field string, idRequired bool) error {
	if err := checkString(jsonnames.Join(field, "id"), e.ID, idRequired, MaxIDLen); err != nil {
		return err
	}
	switch e.Compression {
	case "", CompressionNone, CompressionSemantic, CompressionReference:
	default:
		return &ParamError{Field: jsonnames.Join(field, "compression"), Reason: `must be "none", "semantic" or "reference"`}
	}
	if e.TTLSeconds < 0 {
		return &ParamError{Field: jsonnames.Join(field, "ttl_s"), Reason: reasonNegative}
	}
	if e.BudgetHint < 0 {
		return &ParamError{Field: jsonnames.Join(field, "budget_hint"), Reason: reasonNegative}
	}
	return checkJSON(jsonnames.Join(field, "data"), e.Data, false)
}

// ContextStatus is the status a nekte.context call reports.
type ContextStatus string

// The context statuses: share answers stored, revoke answers revoked, request answers
// not_found (or the stored envelope itself).
const (
	ContextStored   ContextStatus = "stored"
	ContextNotFound ContextStatus = "not_found"
	ContextRevoked  ContextStatus = "revoked"
)

// ContextResult is the result of nekte.context share (with TTLSeconds), revoke, and of a
// request for an envelope that is not there. A successful request returns the Envelope.
type ContextResult struct {
	ID         string        `json:"id"`
	Status     ContextStatus `json:"status"`
	TTLSeconds int64         `json:"ttl_s,omitempty"`
}
