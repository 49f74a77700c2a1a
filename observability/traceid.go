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
		binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
		binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
		if b != [16]byte{} {
			return hex.EncodeToString(b[:])
		}
	}
}
