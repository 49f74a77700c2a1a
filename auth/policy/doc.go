// Package policy decides, for each call, whether its caller may make it: which target kinds
// the caller's trust zone may reach, which scopes the call requires, what class of mutation
// it is, whether it needs a human's approval, and an optional CEL condition over the
// caller's claims and the call's params for what scopes cannot say.
//
// A Config is compiled once into an Engine (New): patterns are parsed and every CEL
// condition is type-checked against the declared environment (see Environment) and turned
// into a program with a cost limit, so a configuration with a bad rule is refused at load,
// naming the rule. Engine.Decide then answers one call from its Input; Engine.Filter
// answers, for a catalog, which entries a caller may see.
//
// NewStage is the policy stage of the gateway's pipeline: it describes each routed call
// as a Subject (Engine.Subject: method, capability id, target kind, MCP server and tool,
// resource or prompt, gRPC full method) from what its target says it reaches
// (gateway.ReachOf), never from the target's concrete type, asks the engine, and refuses
// the call or records the decision in its context (DecisionFrom) for the approval and
// hop-token stages. NewRefusingStage stands in for a policy section that does not compile.
//
// The package knows nothing of routing and may import only gateway and schemas of the
// module (auth and auth/approval import it).
package policy
