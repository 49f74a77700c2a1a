// Package capability is the one catalog behind nekte.discover, nekte.invoke and the
// capability view of every target: MCP tools, mapped gRPC methods and built-in methods,
// each with an id, a category, a description, input and output JSON Schema, examples, a
// version hash and cost hints learned from the calls it served.
//
// # Catalog
//
// A Registry is built from Sources (MCPSource for a bridge's tools, GRPCSource for a
// backend's mapped methods, Static for fixed ones such as the demo target's; SourcesOf
// finds them among a routing table's targets) and from the capabilities given to Update.
// It serves an immutable snapshot that readers load without a lock; a snapshot is rebuilt
// when a source's Generation changes (an MCP list_changed, a gRPC backend's descriptors
// loading), by the first reader to notice, so the next call after a change sees it.
//
// Building a snapshot completes each capability: the category comes from config (per
// kind, or per kind and source) or defaults to the source's name; an absent schema is {}
// (any value); schemas are compacted; the version hash is codecs/nekte.Hash of input and
// output (8 hex digits, or 16). On the wire ids are at most 64 characters (a longer id
// keeps a prefix and gets "~" and 8 hex digits of its SHA-256), categories 32, and
// descriptions 256 (cut with "…"; search uses the full text). Two capabilities with the
// same id are both renamed "<category>.<id>". What was left out or renamed is listed by
// Problems. The catalog version v is a hash of every id, category, hash and description.
//
// # Discover
//
// Registry.DiscoverWith writes the result of nekte.discover at level 0 ({id, cat, h}), 1
// (with desc and cost {avg_ms, avg_tokens} once calls were observed) or 2 (with input,
// output and examples). The filter's category and id select exactly; its query ranks the
// capabilities by BM25 over the terms of the id (counted twice) and of the description.
// Terms are runs of letters and digits, split at camelCase, lower-cased, without plural
// endings and common English words. A capability's score is in [0, 1]: the share of the
// query's terms it matches, each weighted by its inverse document frequency and counting
// fully once it occurs about as often as in an average capability (BM25's saturated term
// frequency, capped at 1); an id equal to the query scores 1. Matches scoring at least
// threshold (config search.threshold, 0.2, when the filter has none) are returned best
// first, at most top_k (search.top_k, 10); ties go by raw BM25 score, then id.
//
// Pagination is additive (DiscoverOptions, read by DecodeDiscover): limit sets the page
// size, and a result with more to come carries next_cursor, which the next call passes as
// cursor. Cursors are opaque and bound to the catalog version and the filter: the same
// catalog gives the same pages, and a cursor from before a catalog change is refused with
// INVALID_PARAMS (data.recovery_hint RESTART_DISCOVERY). Without a limit a page holds
// discover.page_size capabilities, by default all of them.
//
// Shape "compact" (level 0 only) writes {"agent","v","shape":"compact","caps":{"<cat>":
// ["<id>",…],…}}: every key once, no hashes, for agents that only need to know what
// exists.
//
// # Invoke
//
// Registry.Invoke runs nekte.invoke: CAPABILITY_NOT_FOUND for an unknown id; with h and a
// different current hash, VERSION_MISMATCH with data {current_hash, schema: <L2 entry>};
// no h, no check. The input (an absent in is {}) is validated against the input schema,
// compiled once (draft 2020-12 unless the schema names another with $schema; external
// $refs are not loaded) and kept in a bounded cache keyed by the schema's SHA-256; a
// failure is INVALID_PARAMS with data {path: "in.a[2]", reason}. The capability then
// runs on the Invoker, a streamed result is collected into an array of at most
// invoke.max_collected_bytes, and Capability.Levels builds the full, compact and minimal
// forms of the result by codecs/nekte's rules (MCP rules for MCP tools, JSON rules for
// the rest); nekte.Resolve picks the one the budget allows. The result carries meta.ms
// (the Invoker's time) and meta.tokens_used (cl100k tokens of out), and both feed the
// capability's cost hint, a moving average kept in atomics on the catalog entry.
//
// # Visibility
//
// A Visibility decides what one caller sees of a configuration's catalogs — nekte.discover,
// the agent card, the MCP face's lists — by asking, for the call that runs each entry, the
// decision the server hands it (VisibilityParams.Decide, the policy engine's filter: the
// package does not import auth/policy). DiscoverOptions.Visible takes its per-caller
// filter; hidden entries are left out before filtering and paging, and the view's
// fingerprint binds cursors to it.
package capability
