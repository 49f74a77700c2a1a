package server

import (
	"encoding/json"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
)

// agentCardProvider is implemented by the target that serves the nekte.* methods
// (routing/nekte): it writes the agent card, JSON, for the endpoint the request was
// addressed to. A provider configured with an endpoint of its own (behind a proxy that
// terminates TLS or rewrites paths) announces that one instead.
type agentCardProvider interface {
	AgentCard(endpoint string) ([]byte, error)
}

// agentCard returns the provider of the agent card of this configuration: the target
// nekte.discover is routed to, when it provides one; nil when NEKTE is not configured.
func (rt *runtime) agentCard() agentCardProvider {
	t, ok := rt.table.Lookup(nekte.MethodDiscover)
	if !ok {
		return nil
	}
	p, _ := t.(agentCardProvider)
	return p
}

// jwks returns the JSON Web Key Set document {"keys": [...]}.
func (s *Server) jwks() []byte {
	keys := []json.RawMessage{}
	if s.nekte != nil {
		keys = append(keys, s.nekte.svc.ReceiptKey())
	}
	keys = append(keys, s.keyRingKeys()...)
	body, _ := json.Marshal(struct {
		Keys []json.RawMessage `json:"keys"`
	}{keys}) // raw JWKs and a slice of them always marshal
	return body
}
