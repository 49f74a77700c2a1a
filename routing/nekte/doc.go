// Package nekte is the gateway's NEKTE service: the gateway.Target that answers every
// nekte.* method. nekte.discover and nekte.invoke go to the capability catalog (a
// Catalog); this package owns the rest — delegated tasks and their lifecycle, context
// envelopes, signed receipts and their verification, and the introspection guide.
//
// # Tasks
//
// nekte.delegate registers a task (one JSON record per task in the shared state store,
// state) and runs its capability on the capability.Invoker in a goroutine owned by
// the Service, not by the request: a caller that goes away does not cancel the task, and
// may re-attach with nekte.task.stream. The record moves through the NEKTE state machine
//
//	pending → accepted → running → completed
//	running → suspended → running (resume)
//	any non-terminal state → cancelled | failed
//
// and every move goes through one function (move) applied under the store's
// CompareAndSwap, so two replicas cannot both move a task. Each record keeps a bounded log
// of the task's events; the response of nekte.delegate and of nekte.task.stream replays it
// and then follows live events (delivered at once inside the process that runs the task,
// and by polling the store from any other), ending after complete, error or cancelled.
//
// A task belongs to the principal subject that delegated it: every other subject gets
// TASK_NOT_FOUND for it.
//
// # Context envelopes
//
// nekte.context shares, requests and revokes envelopes per owner. Envelopes with
// persist: true live in the shared store; persist: false envelopes never reach it: they
// live in a bounded store inside the process that received them, which leaves only a
// locator (its internal address and a fetch secret, no payload) in the shared store, so
// other replicas reach them through it (peer.go) — and they are gone when it stops.
// forward: false envelopes are passed only to capabilities in their scope; derive: false
// marks tasks whose results must not be kept or re-derived.
//
// # Lost runners
//
// A running task's record carries a lease its runner renews; a replica that reads a task
// whose lease lapsed (its runner died without suspending it) suspends it, so it can be
// resumed anywhere (lease.go).
//
// # Receipts
//
// Every completed task gets a receipt: a JWS signed by the gateway over the task id, the
// capability and its version hash, the SHA-256 of the canonical input and of the canonical
// full output, and the task's timestamps. nekte.verify checks a caller's result hash
// against it, re-runs deterministic capabilities, and reports provenance.
//
// # Configurations
//
// One Service lives as long as the process, so tasks survive reloads. Each configuration
// routes the nekte.* methods to a Route of its own (NewRoute), which carries the Service
// with that configuration's capability catalog, agent card (endpoint and authentication)
// and Visibility: under a policy, nekte.discover and the card list only what the caller
// (for the card, a caller without credentials) may reach. The Service reads the catalog of
// the configuration current at each call through a CurrentCatalog. Service and Route tell
// the stages what they are through gateway's optional interfaces: no backend, NEKTE
// reached, task calls never retried.
//
// The package owns the nekte section of the configuration file (Section): the Service's
// Config beside the Endpoint its Routes' agent cards announce, with its validation.
//
// docs/nekte-tasks.md describes the behaviour and every configuration key.
package nekte
