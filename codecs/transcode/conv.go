package transcode

// This file holds the integer conversions of the wire format. Protobuf defines them as
// two's complement truncation and reinterpretation, which is what Go's conversions do;
// gosec flags each such conversion (G115), so they live here with their reasons.

// trunc32 returns the low 32 bits of v as a signed integer: how protobuf reads an int32,
// sfixed32 or enum from a 64-bit varint.
func trunc32(v uint64) int32 { return int32(v) } //nolint:gosec // truncation is the wire semantics

// low32 returns the low 32 bits of v: how protobuf reads a uint32 from a 64-bit varint.
func low32(v uint64) uint32 { return uint32(v) } //nolint:gosec // truncation is the wire semantics

// narrow returns the low 32 bits of a zigzag-decoded sint32.
func narrow(v int64) int32 { return int32(v) } //nolint:gosec // truncation is the wire semantics

// signed reinterprets the bits of v as two's complement.
func signed(v uint64) int64 { return int64(v) } //nolint:gosec // reinterpretation is the wire semantics

// bitsOf reinterprets the two's complement v as bits.
func bitsOf(v int64) uint64 { return uint64(v) } //nolint:gosec // reinterpretation is the wire semantics

// off32 converts a byte offset within a message, which index keeps below 2^31.
func off32(i int) int32 { return int32(i) } //nolint:gosec // index refuses messages of 2 GiB or more

// hash32 converts a small non-negative int for hashing; wrapping would be harmless.
func hash32(i int) uint32 { return uint32(i) } //nolint:gosec // only a hash input

// smallByte converts n, known to be below 0x80, to the byte that encodes it as a varint.
func smallByte(n int) byte { return byte(n) } //nolint:gosec // callers check n < 0x80
