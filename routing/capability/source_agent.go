package capability

import (
	"strings"

	"github.com/gatehouse-dev/gatehouse/routing/agentlink"
)

// KindAgentOperator is an operator of the compute agents connected over the agent link.
const KindAgentOperator Kind = "agent_operator"

// categoryAgent is the category of agent operators.
const categoryAgent = "agent"

// AgentSource returns the source of the operators the agents connected to a hub offer: one
// capability per operator, whose id and method are the operator's method
// ("<agents.namespace><operator>"); its generation changes whenever an agent offering a new
// operator connects or the last one offering an operator leaves. The target checks the
// input against the operator's schema itself (InputChecked), so direct JSON-RPC calls are
// checked as nekte.invoke's are.
func AgentSource(t *agentlink.Target) Source { return agentSource{t.Hub()} }

type agentSource struct{ h *agentlink.Hub }

func (s agentSource) Generation() uint64 { return s.h.Generation() }

func (s agentSource) Capabilities() ([]Capability, uint64) {
	ops, gen := s.h.Operators()
	out := make([]Capability, 0, len(ops))
	for _, op := range ops {
		desc := op.Description
		if desc == "" {
			desc = "Operator " + op.ID + " of the connected agents"
		}
		out = append(out, Capability{
			ID:           op.Method,
			Category:     categoryAgent,
			Description:  desc + " (agents: " + strings.Join(op.Agents, ", ") + ")",
			Input:        op.Input,
			Output:       op.Output,
			Method:       op.Method,
			Kind:         KindAgentOperator,
			Source:       "agents",
			InputChecked: true,
		})
	}
	return out, gen
}
