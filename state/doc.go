// Package state holds everything in Gatehouse that must outlive one request: idempotency
// records and their in-flight locks, rate-limit counters, the task registry, context
// envelopes, revoked token ids, MCP sessions, pending approvals, the key ring. No such state
// lives in a bare Go map anywhere else.
//
// # Two backends, one primitive
//
// Every backend implements [KV], a store of byte values under string keys. Each KV method
// maps to one atomic Redis command or one Lua script (named in its doc comment), so the
// semantics cannot drift between backends:
//
//   - embedded ([Embedded], the default): in-process, sharded, bounded by a maximum number
//     of entries, so one command runs the gateway;
//   - Redis ([Redis]): several replicas behind a load balancer share it; one server,
//     Sentinel or Cluster, every key under a configured prefix. A call that cannot reach
//     Redis fails with [ErrUnavailable], a -32020 UNAVAILABLE [gateway.Error].
//
// [Open] builds the backend the configuration's state section names.
//
// Both backends also implement the optional interfaces of optional.go, found by type
// assertion: [Bus] (publish/subscribe hints between replicas), [CellRater] (a rate-limit
// decision in one atomic step) and, for Redis only, [Pinger] (reachability, for readiness).
//
// # Time to live on everything
//
// Every entry carries a time to live: a write without one is refused with [ErrNoTTL].
// Nothing lives forever, so a crashed caller never leaves a lock held or a record behind
// for good. An expired entry is never returned, whatever the backend.
//
// # Per-kind interfaces
//
// Features do not use KV directly in their handlers. Each defines its own small interface
// for its kind of state (an idempotency store, a rate-limit counter, a revocation list)
// and implements it on top of KV, owning a key prefix ("idem:", "rl:", ...) and the
// encoding of its values. Typical mappings: an in-flight lock is [KV.SetNX] released with
// [KV.CompareAndSwap] to nil (only by its owner); a fixed-window counter is [KV.Incr]; a
// read-modify-write record is [KV.Get] then [KV.CompareAndSwap].
//
// # The contract suite
//
// Package statetest holds RunKV, the table of tests that pins down every rule of KV: TTL
// expiry (with real short TTLs, since a Redis server's clock cannot be faked), SetNX and
// CompareAndSwap exclusivity under concurrency, Incr's TTL rule, size limits, done
// contexts, copying, Close. Every backend must pass it unchanged; RunBus and RunCellRater
// do the same for [Bus] and [CellRater].
//
// Package state imports only schemas and gateway (the coded error its failures are); every
// layer above keeps what outlives a request behind its interfaces, never in a bare map.
package state
