package msgpack

import "encoding/binary"

// This file holds the integer conversions of the wire format. MessagePack stores signed
// integers in two's complement, which is what Go's conversions do; gosec flags each such
// conversion (G115), so they live here with their reasons.

// signExtend reads the low size bytes of u as a two's complement integer.
func signExtend(u uint64, size int) int64 {
	shift := 64 - 8*size
	return int64(u<<shift) >> shift //nolint:gosec // reinterpretation is the wire semantics
}

// signed reinterprets the bits of u as two's complement.
func signed(u uint64) int64 { return int64(u) } //nolint:gosec // reinterpretation is the wire semantics

// bitsOf reinterprets the two's complement i as bits.
func bitsOf(i int64) uint64 { return uint64(i) } //nolint:gosec // reinterpretation is the wire semantics

// lengthBits converts a length, which is never negative, to bits.
func lengthBits(n int) uint64 { return uint64(n) } //nolint:gosec // lengths are not negative

// appendBE appends the low size bytes of v, big-endian.
func appendBE(dst []byte, v uint64, size int) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return append(dst, b[8-size:]...)
}
