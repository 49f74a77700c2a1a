package agentlink

import "github.com/gatehouse-dev/gatehouse/gateway"

// Trusted reports whether an agent admitted as p (anonymous or not) with creds is trusted
// under a, for tests.
func Trusted(a AuthConfig, p gateway.Principal, anonymous bool, creds gateway.Credentials) bool {
	return a.trusted(p, anonymous, creds)
}

// AffinityOwner returns the agent a task of op with key would go to (the reservation is
// given back), for tests.
func AffinityOwner(h *Hub, op, key string) string {
	a, _ := h.pick(op, key)
	if a == nil {
		return ""
	}
	a.release()
	return a.id
}
