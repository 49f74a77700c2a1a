package sessionrpc

// GRPCConfig is a routed gRPC server-streaming method whose messages map onto events
// (grpcstream.go).
type GRPCConfig struct {
	// Method is the routed JSON-RPC method of the server-streaming gRPC method.
	Method string `yaml:"method" json:"method"`
}
