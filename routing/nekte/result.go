package nekte

import (
	"encoding/json"
	"errors"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// taskResult is a capability's result in its three levels (codecs/nekte's rules: MCP
// rules for MCP tools, JSON rules for the rest), with the digest a receipt signs.
type taskResult struct {
	levels nk.Levels
	digest string // hex SHA-256 of the canonical JSON of the full level
}

// newResultOf builds the levels of capability c's result value with c.Levels, which
// applies the MCP rules to MCP tool results and the JSON rules to the rest. An MCP tool
// result with isError set (TOOL_FAILED from c.Levels) is an error whose message is the
// result's minimal text (toolFailureText).
func newResultOf(c capability.Capability, value json.RawMessage) (*taskResult, error) {
	levels, err := c.Levels(value)
	if text, ok := toolFailureText(err); ok {
		return nil, errors.New(text)
	}
	if err != nil {
		return nil, err
	}
	d, err := digest(levels.Full)
	if err != nil {
		return nil, errors.New("the capability's result is not JSON")
	}
	return &taskResult{levels: levels, digest: d}, nil
}

// toolFailureText returns the minimal text of the CallToolResult a TOOL_FAILED error
// carries in data.result — an MCP tool that reported isError, whether the bridge (as a
// capability's error) or Capability.Levels (from a result value) found it — so a failed
// task says what the tool said.
func toolFailureText(err error) (string, bool) {
	ge, ok := errors.AsType[*gateway.Error](err)
	if !ok || ge.Code() != schemas.CodeToolFailed {
		return "", false
	}
	raw, ok := ge.Data()["result"].(json.RawMessage)
	if !ok {
		return "", false
	}
	lv, err := nk.MCPLevels(raw)
	if err != nil || lv.Minimal == "" {
		return "", false
	}
	return lv.Minimal, true
}

// levelOrder lists, per requested detail level, the levels that may go out, most detailed
// first (nekte-wire.md "Token budget resolution").
var levelOrder = map[nk.DetailLevel][]nk.DetailLevel{
	nk.Full:    {nk.Full, nk.Compact, nk.Minimal},
	nk.Compact: {nk.Compact, nk.Minimal},
	nk.Minimal: {nk.Minimal},
}

// within returns the levels a complete event carries for budget b, and their size in
// tokens: the level nk.Resolve picks, and each less detailed level of the requested
// level's candidates that fits max_tokens too, so the caller can pick the one it needs.
func (t *taskResult) within(b nk.Budget) (nk.Levels, int) {
	_, chosen, _ := nk.Resolve(t.levels, &b)
	var out nk.Levels
	t.copyLevel(&out, chosen)
	after := false
	for _, l := range levelOrder[b.DetailLevel] {
		if l == chosen {
			after = true
			continue
		}
		if text, ok := t.text(l); after && ok && nk.Tokens(text) <= b.MaxTokens {
			t.copyLevel(&out, l)
		}
	}
	return out, nk.Tokens(mustMarshal(out))
}

// text returns the JSON text of a level and whether it exists.
func (t *taskResult) text(l nk.DetailLevel) ([]byte, bool) {
	switch l {
	case nk.Minimal:
		return mustMarshal(t.levels.Minimal), t.levels.Minimal != ""
	case nk.Compact:
		return t.levels.Compact, len(t.levels.Compact) > 0
	default:
		return t.levels.Full, len(t.levels.Full) > 0
	}
}

func (t *taskResult) copyLevel(out *nk.Levels, l nk.DetailLevel) {
	switch l {
	case nk.Minimal:
		out.Minimal = t.levels.Minimal
	case nk.Compact:
		out.Compact = t.levels.Compact
	default:
		out.Full = t.levels.Full
	}
}
