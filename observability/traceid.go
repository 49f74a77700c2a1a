package observability

import (
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
)

// NewTraceID returns a random W3C trace id: 32 lowercase hex digits, never all zero.
func NewTraceID() string {
	var b [16]byte
	for {
		// Trace ids must be unique, not secret: the runtime's fast generator is what
		// OpenTelemetry's SDK uses too.
		binary.LittleEndian.PutUint64(b[:8], rand.Uint64()) //nolint:gosec // uniqueness, not secrecy
		binary.LittleEndian.PutUint64(b[8:], rand.Uint64()) //nolint:gosec // uniqueness, not secrecy
		if b != [16]byte{} {
			return hex.EncodeToString(b[:])
		}
	}
}
