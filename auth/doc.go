// Package auth authenticates callers before any payload is decoded, and holds the
// gateway's own signing keys, the tokens minted with them and the revocation list. Its
// sub-packages build on it: policy (the engine and the policy stage) and approval (pending
// approvals, their stage and admin methods).
//
// It owns the hop-token stage ([NewHopTokenStage]) and the admin.revocations.* methods
// ([RevocationAdmin]); the server puts the stage in its chain and serves the methods on
// its admin listener. It may import gateway, schemas, codecs, state and auth/policy (for
// the decision a hop token's scopes come from), and nothing else of the module.
//
// # Inbound
//
// [Open] builds an [Authenticator] (a gateway.Authenticator) from the auth section:
//
//   - bearer JWTs of configured issuers ([IssuerConfig]). A token is refused before it is
//     parsed when longer than max_token_bytes; its header and claims are decoded strictly
//     (duplicate member names, and case variants of registered claims such as "Exp", are
//     refused, unlike encoding/json's struct decoding). Its iss chooses the issuer, whose keys
//     — from a JWKS URL (fetched with keyfunc, cached, refreshed on schedule and, rate
//     limited, on an unknown kid), a JWKS file, PEM files or a development secret — each
//     verify only the algorithms pinned to them: "none" never, HMAC only with a secret.
//     Headers naming keys (jku, x5u, jwk, x5c) are never used. Then exp (required), nbf and
//     iat with leeway, aud, sub and the required claims are checked, and the scopes (scope,
//     scp) and tier read;
//   - API keys, configured as SHA-256 hashes and compared in constant time;
//   - anonymous access, loopback-only by default.
//
// Every refusal is the AUTHENTICATION_FAILED (4001) error with a [Reason] in error.data; no
// error, log line or datum ever carries the credential.
//
// # Outbound
//
// [OpenKeyRing] builds the gateway's [KeyRing]: Ed25519 or P-256 keys from files or
// generated, kept in a [KeyStore] (the state store) and rotated with an overlap so no token
// stops verifying before it expires. [KeyRing.Mint] signs downstream tokens, [KeyRing.JWKS]
// publishes the public keys, [KeyRing.Verifier] verifies what the ring signed.
//
// # Revocation
//
// [OpenRevocations] opens the process's [Revocations] over the state store: tokens denied
// by jti and subjects by sub, each until a time, shared by every replica sharing the store
// and followed by each within its refresh. [Options].Revocations hands it to an
// Authenticator, which refuses a verified credential it lists with [ReasonRevoked].
// [RevocationAdmin] serves admin.revocations.add, .list and .remove over it.
//
// # Hop tokens
//
// [NewHopTokenStage] is the last stage before dispatch: it gives each call's hop the
// credential its target's downstream_token mode asks for — a token the [KeyRing] mints for
// that hop (scopes narrowed to what the policy rule requires), the caller's own, or none.
package auth
