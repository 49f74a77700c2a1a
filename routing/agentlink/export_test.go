package agentlink

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
