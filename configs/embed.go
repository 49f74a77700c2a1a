// Package configs holds Gatehouse's YAML configurations: the embedded default that
// `gatehouse serve` uses when no file is given, and the examples under examples/.
//
// It imports nothing of Gatehouse; the server embeds the default from here.
package configs

import _ "embed"

// Default is the embedded default configuration (configs/gatehouse.yaml): loopback
// listeners, anonymous access from loopback, and the built-in demo methods.
//
//go:embed gatehouse.yaml
var Default []byte
