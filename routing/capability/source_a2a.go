package capability

import (
	"encoding/json"
	"strings"

	"github.com/gatehouse-dev/gatehouse/routing/a2a"
)

// KindA2ASkill is a skill of an upstream A2A agent (routing.a2a.agents).
const KindA2ASkill Kind = "a2a_skill"

// A2ASource returns the source of an upstream A2A agent's skills: one capability per skill
// of its card, whose id and method are the agent's prefix + the skill's id, with the
// agent's name as category and source. Its generation follows the card: it changes when a
// fetched card changes the skills. The input is the call's message ({text, data}), the
// output the final task's text and artifacts (a2a.Output).
func A2ASource(t *a2a.Target) Source { return a2aSource{t} }

type a2aSource struct{ t *a2a.Target }

func (s a2aSource) Generation() uint64 { return s.t.Generation() }

var (
	a2aInput  = json.RawMessage(a2a.InputSchema)
	a2aOutput = json.RawMessage(a2a.OutputSchema)
)

func (s a2aSource) Capabilities() ([]Capability, uint64) {
	skills, gen := s.t.Skills()
	name := s.t.Config().Name
	out := make([]Capability, 0, len(skills))
	for _, sk := range skills {
		desc := sk.Description
		if desc == "" {
			desc = sk.Name
		}
		if desc == "" {
			desc = "Skill " + sk.ID + " of the A2A agent " + name
		}
		if len(sk.Examples) > 0 {
			desc += " (e.g. " + strings.Join(sk.Examples, "; ") + ")"
		}
		out = append(out, Capability{
			ID:          sk.Method,
			Category:    "a2a." + name,
			Description: desc,
			Input:       a2aInput,
			Output:      a2aOutput,
			Method:      sk.Method,
			Kind:        KindA2ASkill,
			Source:      a2a.BackendPrefix + name,
		})
	}
	return out, gen
}
