// Package nekte is the wire codec of NEKTE, the agent-to-agent protocol Gatehouse speaks
// beside JSON-RPC and MCP: the params and results of every nekte.* method, their
// validation, the capability version hash, the delegate event stream, token counting,
// token budget resolution, and the rules that turn a result into its three levels of
// detail. It follows the wire of the NEKTE reference implementation (protocol 0.2.x);
// it holds no state and does no I/O.
//
// # Params
//
// Decode reads a request's params into the method's params type (DiscoverParams,
// InvokeParams, DelegateParams, ContextParams, VerifyParams, TaskCancelParams,
// TaskResumeParams, TaskStatusParams, IntrospectParams) with member names matched
// case-sensitively, and validates them. A *ParamError names the field and says why it is
// wrong; its code is schemas.CodeInvalidParams. Lengths are counted as JavaScript counts
// them (UTF-16 code units): ids at most 64, categories 32, hashes 64, capability
// descriptions 256.
//
// # Version hash
//
// Hash computes a capability's h: the first 8 (or 16) hex digits of the SHA-256 of the
// canonical JSON (package canonical) of {"input": <input schema>, "output": <output
// schema>}. It reproduces the published NEKTE test vectors.
//
// # Tokens and budgets
//
// Tokens counts tokens with the cl100k_base byte-pair encoding, from tables compiled
// into the binary. Resolve picks the level a budget allows: with no budget, 500 tokens
// at compact; a budget without max_tokens gets its level's default (minimal 50, compact
// 500, full 4096). The candidates are full, compact, minimal for full; compact, minimal
// for compact; minimal alone for minimal. The first candidate that exists and fits wins;
// if none fits, minimal is returned if it exists, else compact, else full. The size of a
// level is the token count of its JSON text as sent (minimal in its quotes); results
// should go out without HTML escaping (as AppendEvent and jsonrpc.AppendResult write
// them, and unlike encoding/json's Marshal), so that what was counted is what is sent.
//
// # Levels of a result
//
// Every result has three representations. Full is the result as the backend sent it
// (without insignificant white space). Compact keeps the structure and cuts the bulk.
// Minimal is one line of plain text. The limits below are those of DefaultRules; Rules
// changes them.
//
// JSON results (a gRPC response as JSON, or an MCP tool's structuredContent):
//
//   - Compact is the value with:
//     a string longer than 256 characters cut to 256, followed by "…(+N chars)";
//     an array longer than 10 items cut to 10, followed by one more item, the string
//     "…(+N items)";
//     an object with more than 32 members cut to 32, followed by the member
//     "…": "+N members";
//     an array or object nested 5 levels below the top replaced by the string
//     "[N items]" or "{N members}";
//     numbers, booleans, null and member order kept as they are.
//   - Minimal is: a string itself; a number, boolean or null as
//     its JSON text; an object as "name: value, name: value, …" over its first 32
//     members; an array as "N items: value, value, …" over its first 10 items ("0
//     items" when empty). Inside these lists, a string or scalar appears as its text, a
//     nested array as "[N items]" and a nested object as "{N members}".
//
// MCP tool results (a CallToolResult: content, structuredContent, isError):
//
//   - When structuredContent is present and isError is not true, compact and minimal are
//     those of structuredContent (JSON rules above).
//   - Otherwise compact is built from content. When every item is text, it is
//     {"text": <the texts joined by newlines>}; else {"content": [<descriptors>]}
//     over the first 10 items, followed by the string "…(+N items)" if there were more.
//     The descriptors are: text {"type", "text"}; image and audio {"type", "mimeType",
//     "bytes": <decoded size>} (the data itself is dropped); an embedded resource
//     {"type", "uri", "mimeType", "text"} or, for a blob, {"type", "uri", "mimeType",
//     "bytes"}; resource_link {"type", "uri", "name", "mimeType"}; any other type
//     {"type"}. Annotations and _meta are dropped, and so are empty fields. Text — of
//     text items and embedded text resources together, in order — is kept up to 1600
//     characters in all; the item where the allowance runs out is cut with "…(+N chars)".
//     An error result gets "isError": true as its last member.
//   - Minimal is then, for an error, "error: " followed by its first non-blank text (or
//     just "error"); otherwise the first non-blank text item; without one, a description
//     of the items, each "image (image/png, 1234 bytes)", "audio (…)", "resource <uri>"
//     or "resource link <uri>", joined by ", " and prefixed with "N items: " when there
//     are several; "no content" when content is empty.
//
// Every minimal line is made one line (each run of white space, line breaks included,
// becomes one space; a line left empty reads "(empty)"). A line whose JSON string is
// more than 50 tokens is cut to its longest prefix that ends at a token boundary (moved
// back to a character boundary) and, with "…" appended, is at most 50 tokens as a JSON
// string — so minimal always fits the minimal default budget.
//
// # Delegate stream
//
// nekte.delegate answers with server-sent events. AppendEvent writes one event exactly as
// the reference client parses it: "event: <name>\ndata: <one-line JSON>\n\n". The
// payload types (ProgressEvent, PartialEvent, CompleteEvent, ErrorEvent, CancelledEvent,
// SuspendedEvent, ResumedEvent, StatusChangeEvent) name their event; Final says which
// end the stream.
//
// It imports schemas and the other codecs (canonical, jsonrpc, sse), nothing above them.
package nekte
