package capability

import (
	"context"
	"encoding/json"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// Kind is where a capability comes from.
type Kind string

// Kinds of capability.
const (
	KindMCPTool    Kind = "mcp_tool"    // a tool of a bridged MCP server
	KindGRPCMethod Kind = "grpc_method" // a mapped method of a gRPC backend
	KindBuiltin    Kind = "builtin"     // a method the gateway answers itself
)

// Capability is one invocable unit of the catalog.
type Capability struct {
	// ID is the capability id on the NEKTE wire (at most 64 characters).
	ID string
	// Category groups capabilities (at most 32 characters); set per source in config.
	Category string
	// Description is the human text (at most 256 characters on the wire).
	Description string
	// Input and Output are the JSON Schemas of the input and the result (draft 2020-12).
	// Output may be empty when the source declares none.
	Input, Output json.RawMessage
	// Examples are sample inputs and outputs, when the source has any.
	Examples []Example
	// Hash is the version hash of Input and Output (codecs/nekte.Hash).
	Hash string
	// Method is the JSON-RPC method that runs the capability through the pipeline.
	Method string
	// Kind says where the capability comes from.
	Kind Kind
	// Source names the backend (an MCP upstream, a gRPC backend) for provenance.
	Source string
	// Streaming is true for server-streaming gRPC methods: their results are a Stream.
	Streaming bool
	// Deterministic is true when re-running the capability on the same input yields the same
	// output (nekte.verify "sample" re-runs only these).
	Deterministic bool
	// Cost is the cost hint learned from the calls the capability served.
	Cost Cost
	// InputChecked is true when the capability's method checks its input against Input
	// itself before any backend sees it (an MCP tool: the bridge's target does, with the
	// schema compiled once per catalog version). Invoke then leaves the check to the
	// method, so the input is checked once, and reports a refusal in its own notation.
	InputChecked bool
}

// Example is one sample input and output of a capability.
type Example struct {
	In  json.RawMessage `json:"in"`
	Out json.RawMessage `json:"out"`
}

// Cost is a cost hint: the average latency and result size of past calls; zero fields are
// unknown.
type Cost struct {
	AvgMs     int `json:"avg_ms,omitempty"`
	AvgTokens int `json:"avg_tokens,omitempty"`
}

// Invoker runs a capability's method through the gateway's pipeline on behalf of the
// caller in ctx, with gateway.Call.Capability set to the capability's id. The server
// implements it. A progress sink in ctx (gateway.WithProgress) receives the backend's
// progress; cancelling ctx cancels the backend call (MCP notifications/cancelled, gRPC
// context cancellation). The result is a Value, or a Stream for streaming capabilities.
type Invoker interface {
	Invoke(ctx context.Context, c Capability, input json.RawMessage) (*gateway.Result, error)
}
