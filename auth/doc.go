// Package auth authenticates callers before any payload is decoded and, as it grows,
// authorizes calls, narrows scopes for downstream tokens, and handles revocation and
// approvals. Today it provides the anonymous mode the embedded demo configuration uses:
// callers without a credential are admitted as "anonymous", by default only from loopback.
package auth
