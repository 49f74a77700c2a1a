// Package jsonrpc is Gatehouse's strict JSON-RPC 2.0 envelope codec: Decode reads an HTTP
// body or WebSocket message into requests, and the Append functions write responses. It is
// the gateway's hot path and is written by hand: encoding/json is not used to decode, and
// only the error-path helper AppendDataObject uses it to encode.
//
// # Body
//
// The whole body is checked against the JSON grammar of RFC 8259 before any request in it
// is judged, so a batch with broken JSON in one element is a single parse error
// (CodeParseError, -32700). A body is a parse error when it is empty or only whitespace,
// has anything but whitespace after its value, or holds a string with a raw control
// character, a malformed escape or invalid UTF-8 (lone surrogates written as \u escapes are
// accepted, and decode to U+FFFD), or a number outside the grammar. Every such body is also
// rejected by encoding/json's Valid; the converse does not hold, since Valid accepts
// invalid UTF-8.
//
// A syntactically valid body is an invalid request (CodeInvalidRequest) when it is neither
// an object nor an array, when it is the empty array, or when it exceeds a limit anywhere:
// nesting deeper than Limits.MaxDepth (a batch array counts as a level) or a string, member
// names included, longer than Limits.MaxStringBytes bytes of raw JSON text. A limit error
// names the limit and its value in DecodeError.Limit and DecodeError.Max. A parse error
// outranks a limit.
//
// An object is one request; an array is a batch with one member per element, in order.
//
// # Requests
//
// Each request is checked on its own, and a request that fails becomes a member whose Err
// replaces it:
//
//   - It must be an object whose members are exactly jsonrpc, method, params and id, with
//     names compared case-sensitively after unescaping ("\u006dethod" is method). Any other
//     member, or a name given twice, makes it an invalid request.
//   - No object anywhere in it may repeat a name (again compared after unescaping), params
//     included: duplicate names are read differently by different parsers, and must not
//     smuggle a second value past the gateway.
//   - jsonrpc must be the string "2.0"; method a non-empty string; params, when present, an
//     object or an array (not null); id, when present, a string, a number or null. A request
//     without id is a notification.
//
// Errors never echo input. A request's error carries its id whenever the id was read
// validly, wherever it stood in the object; otherwise the zero ID, which encodes as null.
//
// # Reserved params
//
// In object params, the gateway owns two members and removes them before the params go
// anywhere else: depends_on, an array of string or number ids (Request.DependsOn), and
// deadline_ms, a positive integer no greater than 2^53 written without fraction or exponent
// (Request.DeadlineMs). A value of the wrong type makes the request's error
// CodeInvalidParams; an invalid request outranks it.
//
// # Memory
//
// A decoded payload costs a few allocations whatever its size: one for the members, one
// for all method and id strings, and one each for depends_on ids, rewritten params and
// errors when there are any. Params that were not rewritten alias the body.
//
// It imports only schemas (the error-code table); every face decodes and encodes through it.
package jsonrpc
