// Package tasks holds the level-3 (protocol-state, model-based) tests of the task-shaped
// faces: NEKTE tasks, A2A, the agent link and the gRPC face's streams. Each test generates
// interleaved operations from a replayable seed, runs them (concurrently where two moves
// race), checks every outcome against a small reference model of the state machine, and
// then requires goroutines, open files and state-store keys back to their baseline. A
// goroutine reloads the configuration during each run.
package tasks
