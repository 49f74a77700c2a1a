package capability

import (
	"encoding/json"

	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
)

// MCPCatalog is what the MCP source needs of a bridge: its catalog and the method prefix
// of its tools. *mcpbackend.Target implements it.
type MCPCatalog interface {
	Catalog() *mcpbackend.Catalog
	Namespace() string
}

var _ MCPCatalog = (*mcpbackend.Target)(nil)

// MCPSource returns the source of a bridge's tools (MCPTools); its generation follows the
// bridge's catalog, which changes when an upstream's tool list changes (list_changed),
// an upstream goes down or comes back, or names are re-resolved.
func MCPSource(t MCPCatalog) Source { return mcpSource{t} }

type mcpSource struct{ t MCPCatalog }

func (s mcpSource) Generation() uint64 { return generationOf(s.t.Catalog()) }

func (s mcpSource) Capabilities() ([]Capability, uint64) {
	cat := s.t.Catalog()
	if cat == nil {
		return nil, 0
	}
	return MCPTools(cat.Tools, s.t.Namespace()), generationOf(cat)
}

// generationOf is a catalog's generation, one higher so that no catalog reads as 0.
func generationOf(cat *mcpbackend.Catalog) uint64 {
	if cat == nil {
		return 0
	}
	return cat.Generation + 1
}

// MCPTools turns catalog tool entries into capabilities: the id is the exposed tool name,
// the description the tool's description (else its title), the input its inputSchema,
// the output its outputSchema (absent: any value), the method namespace + name. Tools that
// are unavailable (upstream down, name collision) or whose definition is not a tool are
// left out. A tool is deterministic when its annotations say it is read-only, idempotent
// and not open-world. Their input is checked by the bridge's target, against the schema
// it compiled for the catalog (InputChecked), not again by Invoke.
func MCPTools(entries []mcpbackend.Entry, namespace string) []Capability {
	out := make([]Capability, 0, len(entries))
	for _, e := range entries {
		if !e.Available {
			continue
		}
		var def toolDefinition
		if json.Unmarshal(e.Definition, &def) != nil {
			continue
		}
		out = append(out, Capability{
			ID:            e.Name,
			Description:   def.description(),
			Input:         def.InputSchema,
			Output:        def.OutputSchema,
			Method:        namespace + e.Name,
			Kind:          KindMCPTool,
			Source:        e.Upstream,
			Deterministic: def.Annotations.deterministic(),
			InputChecked:  true,
		})
	}
	return out
}

// toolDefinition is the part of an MCP tool definition a capability takes.
type toolDefinition struct {
	Title        string           `json:"title"`
	Description  string           `json:"description"`
	InputSchema  json.RawMessage  `json:"inputSchema"`
	OutputSchema json.RawMessage  `json:"outputSchema"`
	Annotations  *toolAnnotations `json:"annotations"`
}

type toolAnnotations struct {
	Title          string `json:"title"`
	ReadOnlyHint   *bool  `json:"readOnlyHint"`
	IdempotentHint *bool  `json:"idempotentHint"`
	OpenWorldHint  *bool  `json:"openWorldHint"`
}

func (d *toolDefinition) description() string {
	switch {
	case d.Description != "":
		return d.Description
	case d.Title != "":
		return d.Title
	case d.Annotations != nil:
		return d.Annotations.Title
	default:
		return ""
	}
}

func (a *toolAnnotations) deterministic() bool {
	isTrue := func(b *bool) bool { return b != nil && *b }
	return a != nil && isTrue(a.ReadOnlyHint) && isTrue(a.IdempotentHint) && a.OpenWorldHint != nil && !*a.OpenWorldHint
}
