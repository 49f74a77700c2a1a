package nekte

import (
	"encoding/json"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonnames"
	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
)

// DetailLevel is how much of a result the caller wants: full, compact or minimal.
type DetailLevel string

// The detail levels, from most to least detailed.
const (
	Full    DetailLevel = "full"
	Compact DetailLevel = "compact"
	Minimal DetailLevel = "minimal"
)

// Valid reports whether l is one of the three detail levels.
func (l DetailLevel) Valid() bool { return l == Full || l == Compact || l == Minimal }

// Default token budgets per detail level (nekte-wire.md "Token budget resolution").
const (
	DefaultMinimalTokens = 50
	DefaultCompactTokens = 500
	DefaultFullTokens    = 4096
)

// DefaultTokens returns the default token budget of a detail level; an unknown level
// counts as compact.
func DefaultTokens(l DetailLevel) int {
	switch l {
	case Minimal:
		return DefaultMinimalTokens
	case Full:
		return DefaultFullTokens
	default:
		return DefaultCompactTokens
	}
}

// Budget is a token budget: the most tokens the caller accepts, and the level of detail it
// prefers.
type Budget struct {
	MaxTokens   int         `json:"max_tokens"`
	DetailLevel DetailLevel `json:"detail_level"`
}

// DefaultBudget is the budget used when a call carries none: 500 tokens, compact.
var DefaultBudget = Budget{MaxTokens: DefaultCompactTokens, DetailLevel: Compact}

// Effective returns the budget with defaults filled in: a nil budget is DefaultBudget, a
// missing detail level is compact, and a missing max_tokens (zero) is the default of the
// detail level. (An unknown detail level, which validation rejects, also counts as
// compact.)
func (b *Budget) Effective() Budget {
	if b == nil {
		return DefaultBudget
	}
	e := *b
	if !e.DetailLevel.Valid() {
		e.DetailLevel = Compact
	}
	if e.MaxTokens <= 0 {
		e.MaxTokens = DefaultTokens(e.DetailLevel)
	}
	return e
}

// validate checks a budget found at field (nil is valid: the default applies).
func (b *Budget) validate(field string) error {
	switch {
	case b == nil:
		return nil
	case b.MaxTokens < 0:
		return &ParamError{Field: jsonnames.Join(field, "max_tokens"), Reason: reasonNegative}
	case b.DetailLevel != "" && !b.DetailLevel.Valid():
		return &ParamError{Field: jsonnames.Join(field, "detail_level"), Reason: `must be "full", "compact" or "minimal"`}
	default:
		return nil
	}
}

// Levels holds the representations of one result, as the out member of a delegate
// complete event carries them. A level exists when its field is non-empty. Minimal is a
// plain string; Compact and Full are JSON texts.
type Levels struct {
	Minimal string          `json:"minimal,omitempty"`
	Compact json.RawMessage `json:"compact,omitempty"`
	Full    json.RawMessage `json:"full,omitempty"`
}

// at returns the JSON text of a level, and whether the level exists.
func (l *Levels) at(level DetailLevel) (json.RawMessage, bool) {
	switch level {
	case Minimal:
		if l.Minimal == "" {
			return nil, false
		}
		return jsonrpc.AppendString(nil, l.Minimal), true
	case Compact:
		return l.Compact, len(l.Compact) > 0
	default:
		return l.Full, len(l.Full) > 0
	}
}

// candidates lists, per requested level, the levels tried in order.
var candidates = map[DetailLevel][]DetailLevel{
	Full:    {Full, Compact, Minimal},
	Compact: {Compact, Minimal},
	Minimal: {Minimal},
}

// Resolve picks the representation to return for a budget, exactly as nekte-wire.md
// "Token budget resolution" says: with the budget's defaults applied (Budget.Effective),
// the candidates for full are full, compact, minimal; for compact, compact then minimal;
// for minimal, minimal alone. The first candidate that exists and whose JSON text fits
// max_tokens wins. If none fits, the result is minimal if it exists, else compact, else
// full (null when no level exists at all).
//
// out is the JSON text on the wire (for minimal, the string in JSON quotes), level is the
// level chosen, and tokens is Tokens(out).
func Resolve(levels Levels, budget *Budget) (out json.RawMessage, level DetailLevel, tokens int) {
	b := budget.Effective()
	for _, c := range candidates[b.DetailLevel] {
		text, ok := levels.at(c)
		if !ok || !mayFit(text, b.MaxTokens) {
			continue
		}
		if n := Tokens(text); n <= b.MaxTokens {
			return text, c, n
		}
	}
	for _, c := range []DetailLevel{Minimal, Compact, Full} {
		if text, ok := levels.at(c); ok {
			return text, c, Tokens(text)
		}
	}
	null := json.RawMessage("null")
	return null, Full, Tokens(null)
}
