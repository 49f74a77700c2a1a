package nekte

// ProtocolVersion is the NEKTE protocol version an agent card announces: the version of
// the reference implementation whose wire this package speaks.
const ProtocolVersion = "0.2.0"

// CardPath is where an agent card is served, both at the root and under the advertised
// endpoint's path (the reference client fetches <endpoint>/.well-known/nekte.json).
const CardPath = "/.well-known/nekte.json"

// Auth is how an agent authenticates callers, as its card announces it.
type Auth string

// The authentication schemes of an agent card.
const (
	AuthBearer Auth = "bearer"
	AuthAPIKey Auth = "apikey"
	AuthNone   Auth = "none"
)

// AgentCard is the document served at CardPath.
type AgentCard struct {
	Nekte         string   `json:"nekte"`
	Agent         string   `json:"agent"`
	Endpoint      string   `json:"endpoint"`
	Caps          []string `json:"caps"`
	Auth          Auth     `json:"auth"`
	BudgetSupport bool     `json:"budget_support"`
}
