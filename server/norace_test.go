//go:build !race

package server

// raceEnabled says the race detector is on: allocation counts differ then, and sync.Pool
// drops items at random.
const raceEnabled = false
