// Package approval holds the calls a policy marks as needing a human's approval until an
// operator decides them. It owns:
//
//   - the approvals section ([Config]: timeout, max_pending, poll_interval, admin_scope,
//     audit_ttl) with its defaults and the checks the schema cannot make ([Config.Validate]);
//   - the [Store] of pending approvals and their audit records, over the state store's KV
//     ([NewStore]), so every replica sharing the store sees and decides the same approvals;
//   - the approval stage ([NewStage]), which holds a call whose policy decision
//     (policy.DecisionFrom) needs approval until it is approved, denied, withdrawn or expires;
//   - the admin.approvals.* methods ([Admin]) that list and decide approvals. The admin
//     listener's JSON-RPC handling stays with the server, which calls [Admin.Run].
//
// It may import gateway, schemas, codecs, state and auth/policy, and nothing else of the
// module.
package approval
