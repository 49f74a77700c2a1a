package nekte

import (
	"encoding/json"
	"math"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonnames"
)

// Discovery levels: L0 catalog, L1 summaries, L2 full schemas.
const (
	LevelCatalog = 0
	LevelSummary = 1
	LevelSchema  = 2
)

// DiscoverParams are the params of nekte.discover.
type DiscoverParams struct {
	Level  int             `json:"level"`
	Filter *DiscoverFilter `json:"filter,omitempty"`
}

// DiscoverFilter narrows a discovery. Empty fields do not filter.
type DiscoverFilter struct {
	Category  string  `json:"category,omitempty"`
	Query     string  `json:"query,omitempty"`
	ID        string  `json:"id,omitempty"`
	TopK      int     `json:"top_k,omitempty"`
	Threshold float64 `json:"threshold,omitempty"`
}

var _ Params = (*DiscoverParams)(nil)

// Validate checks the level (0, 1 or 2) and the filter: id at most MaxIDLen characters,
// category at most MaxCategoryLen, top_k not negative, threshold in [0, 1].
func (p *DiscoverParams) Validate() error {
	if p.Level < LevelCatalog || p.Level > LevelSchema {
		return &ParamError{Field: "level", Reason: "must be 0, 1 or 2"}
	}
	f := p.Filter
	if f == nil {
		return nil
	}
	if err := checkString("filter.id", f.ID, false, MaxIDLen); err != nil {
		return err
	}
	if err := checkString("filter.category", f.Category, false, MaxCategoryLen); err != nil {
		return err
	}
	if f.TopK < 0 {
		return &ParamError{Field: "filter.top_k", Reason: reasonNegative}
	}
	if f.Threshold < 0 || f.Threshold > 1 || math.IsNaN(f.Threshold) {
		return &ParamError{Field: "filter.threshold", Reason: "must be between 0 and 1"}
	}
	return nil
}

// CapRef is an L0 catalog entry: id, category and version hash.
type CapRef struct {
	ID  string `json:"id"`
	Cat string `json:"cat"`
	H   string `json:"h"`
}

// CapSummary is an L1 entry: the L0 fields, a description and an optional cost hint.
type CapSummary struct {
	ID   string `json:"id"`
	Cat  string `json:"cat"`
	H    string `json:"h"`
	Desc string `json:"desc"`
	Cost *Cost  `json:"cost,omitempty"`
}

// CapSchema is an L2 entry: the L1 fields, the input and output JSON Schemas and optional
// examples. It is also the schema a VERSION_MISMATCH error carries.
type CapSchema struct {
	ID       string          `json:"id"`
	Cat      string          `json:"cat"`
	H        string          `json:"h"`
	Desc     string          `json:"desc"`
	Cost     *Cost           `json:"cost,omitempty"`
	Input    json.RawMessage `json:"input"`
	Output   json.RawMessage `json:"output"`
	Examples []Example       `json:"examples,omitempty"`
}

// Cost is a capability's cost hint.
type Cost struct {
	AvgMs     int `json:"avg_ms,omitempty"`
	AvgTokens int `json:"avg_tokens,omitempty"`
}

// Example is one example call of a capability.
type Example struct {
	In  json.RawMessage `json:"in"`
	Out json.RawMessage `json:"out"`
}

// Ref returns the L0 entry of c.
func (c *CapSchema) Ref() CapRef { return CapRef{ID: c.ID, Cat: c.Cat, H: c.H} }

// Summary returns the L1 entry of c.
func (c *CapSchema) Summary() CapSummary {
	return CapSummary{ID: c.ID, Cat: c.Cat, H: c.H, Desc: c.Desc, Cost: c.Cost}
}

// Validate checks a capability entry against the reference validator's limits: id (at
// most MaxIDLen characters), cat (MaxCategoryLen) and h (MaxHashLen) required, desc at
// most MaxDescLen, input and output present and valid JSON, examples valid JSON. Field
// paths in errors are relative to the entry.
func (c *CapSchema) Validate() error {
	checks := []struct {
		field, value string
		limit        int
	}{{"id", c.ID, MaxIDLen}, {"cat", c.Cat, MaxCategoryLen}, {"h", c.H, MaxHashLen}}
	for _, ch := range checks {
		if err := checkString(ch.field, ch.value, true, ch.limit); err != nil {
			return err
		}
	}
	if err := checkString("desc", c.Desc, false, MaxDescLen); err != nil {
		return err
	}
	if c.Cost != nil && (c.Cost.AvgMs < 0 || c.Cost.AvgTokens < 0) {
		return &ParamError{Field: "cost", Reason: reasonNegative}
	}
	if err := checkJSON("input", c.Input, true); err != nil {
		return err
	}
	if err := checkJSON("output", c.Output, true); err != nil {
		return err
	}
	for i, ex := range c.Examples {
		if err := checkJSON(jsonnames.Index("examples", i)+".in", ex.In, false); err != nil {
			return err
		}
		if err := checkJSON(jsonnames.Index("examples", i)+".out", ex.Out, false); err != nil {
			return err
		}
	}
	return nil
}

// checkJSON reports a missing required value or text that is not JSON.
func checkJSON(field string, v json.RawMessage, required bool) error {
	switch {
	case len(v) == 0 && required:
		return &ParamError{Field: field, Reason: "is required"}
	case len(v) > 0 && !json.Valid(v):
		return &ParamError{Field: field, Reason: reasonJSON}
	default:
		return nil
	}
}

// DiscoverResult is the result of nekte.discover. E is the entry type of the level asked
// for: CapRef for L0, CapSummary for L1, CapSchema for L2.
type DiscoverResult[E CapRef | CapSummary | CapSchema] struct {
	Agent string `json:"agent"`
	V     string `json:"v,omitempty"`
	Caps  []E    `json:"caps"`
}
