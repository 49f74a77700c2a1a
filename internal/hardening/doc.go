// Package hardening holds the gateway's level-2 (semantic) and level-3 (protocol-state)
// fuzz tests, end to end against an in-process gateway on loopback: hostile but
// structurally valid calls per face, and model-based sequences of interleaved operations
// checked against a small reference model of each face's state machine.
//
// The non-test files are the shared harness: Start runs a gateway from YAML over an
// embedded state store the test can count; Baseline records goroutines, open file
// descriptors and state-store keys and checks they come back after a run; Rand and
// Iterations make every run reproducible from the seed it logs (GATEHOUSE_FUZZ_SEED)
// and as long as asked (GATEHOUSE_FUZZ_ITER); Leaks finds internal detail in a message
// a caller can read. docs/reliability.md says what is fuzzed and how to run it longer.
package hardening
