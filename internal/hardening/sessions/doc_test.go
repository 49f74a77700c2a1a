// Package sessions holds the level-3 (protocol-state) tests of the faces that keep state
// per client: the MCP face's sessions and tasks (/mcp), the JSON-RPC WebSocket (/ws) and
// session RPC (/session, /session/chat). Each test generates interleaved operations from a
// replayable seed, runs them (concurrently where the state is shared) against an
// in-process gateway while a reloader re-applies its configuration, checks every outcome
// against a small reference model of the face's state machine, and requires goroutines,
// open files and state-store keys back at their baseline after the run.
package sessions
