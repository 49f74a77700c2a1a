// Package msgpack transcodes between MessagePack and JSON text at the boundary, for
// clients that post JSON-RPC as application/x-msgpack. The gateway runs its strict
// JSON-RPC decoder on the JSON ToJSON writes, and FromJSON turns the JSON of a response
// back into MessagePack; this package only transcodes and never judges JSON-RPC.
//
// # MessagePack to JSON
//
// ToJSON reads exactly one MessagePack value (anything after it is an error) and writes
// it as compact JSON text:
//
//   - nil, true and false become null, true and false;
//   - integers of every width become decimal integers, unchanged (uint64 values above
//     2^63 and int64 values below -2^53 included: JSON numbers have no width);
//   - a float64 becomes the shortest decimal that reads back as the same double, and a
//     float32 the shortest that reads back as the same float32; either is written with a
//     fraction or an exponent ("1.0", "1e+21"), so it stays a float through FromJSON.
//     NaN and infinities have no JSON form and are errors;
//   - a str becomes a JSON string; it must be valid UTF-8;
//   - bin becomes a JSON string holding the bytes in standard base64 with padding (as
//     protobuf's JSON mapping writes bytes fields);
//   - an array becomes an array, in order;
//   - a map becomes an object with its members in order; every key must be a str (any
//     other key is an error), and repeated keys are written as they come, for the
//     JSON-RPC decoder to reject;
//   - the timestamp extension (type -1) becomes an RFC 3339 string in UTC with as many
//     fraction digits as needed ("2026-01-15T10:30:00.5Z"), for years 1 to 9999; every
//     other extension type is an error.
//
// Limits bounds the document: its size, the nesting of arrays and maps, and the length
// of any str, key or bin. A length prefix longer than the rest of the document is an
// error before anything is allocated for it.
//
// # JSON to MessagePack
//
// FromJSON reads one JSON value and writes it as MessagePack, in the smallest encoding of
// each value: a number written without fraction or exponent that fits int64 (or, if
// positive, uint64) becomes an integer; every other number becomes a float64 (the nearest
// double; a number beyond the double range is an error). Strings become str, with escapes
// decoded and invalid UTF-8 read as U+FFFD, as encoding/json reads it. Objects keep
// their members in order. ToJSON(FromJSON(j)) is j up to white space, string escapes and
// number spelling, and FromJSON(ToJSON(m)) gives m back in its smallest encoding except
// that bin and timestamps come back as str.
//
// It imports schemas and codecs/jsonrpc (to word its limit errors as the JSON decoder does),
// nothing above the codecs.
package msgpack
