//go:build race

package jsonrpc_test

// raceEnabled says the race detector is on; sync.Pool then drops items at random, so
// allocation counts are not stable.
const raceEnabled = true
