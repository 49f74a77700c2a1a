package sessionrpc

// UpstreamConfig is an agent server that speaks session RPC itself (upstream.go).
type UpstreamConfig struct {
	// URL is the upstream's WebSocket endpoint (ws:// or wss://) or, for HTTP+SSE, its
	// base URL (http:// or https://).
	URL string `yaml:"url" json:"url"`
}
