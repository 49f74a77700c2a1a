// Package semantic is the gateway's level-2 fuzzing: hostile but structurally valid
// calls to every face of an in-process gateway — ids of every JSON type and size,
// unicode edge cases, names with injection characters, impossible deadlines, negative
// and huge budgets, depends_on graphs, params at every configured limit ± 1 — each
// checked against the invariants of docs/reliability.md: a well-formed answer carrying
// the error of the table the input calls for (or a success where the input was valid),
// no panic, nothing internal leaked, and no state change or backend hit for a refused
// call.
//
// Gen is the generator the tests expand their classes of input with; the tests are in
// this package's _test files, one per face.
package semantic
