package observability

// CardLoaded counts one card fetch of an upstream A2A agent (routing/a2a's Observer): result
// "ok", or the reason it was refused ("fetch", "signature", "invalid").
func (m *Metrics) CardLoaded(agent string, ok bool, reason string) {
	if m == nil {
		return
	}
	if ok {
		reason = "ok"
	}
	m.a2aCards.WithLabelValues(agent, reason).Inc()
}
