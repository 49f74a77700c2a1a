// Package blob holds the gateway's DataRefs: large inputs and outputs of tasks travel as
// references to immutable objects of a blob store, and agents read and write their bytes
// through short-lived signed URLs rather than inside protocol messages.
//
// # Stores
//
// [Store] is the small interface every backend implements; two do:
//
//   - [Dir] (the default): a local directory. An object is written to a temporary
//     directory and renamed into place in one step, so readers never see a partial object
//     and a second writer of the same key fails with [ErrExists]. Paths are derived from a
//     hash of the key, so no key can reach outside the root.
//   - [S3]: an S3-compatible object store through minio-go. Objects are created with
//     If-None-Match: *, so the object store itself refuses a second write of a key.
//
// Both pass the contract suite of package blobtest unchanged. An object is immutable once
// written: a key cannot be written twice while the object lives ([Store.Delete] and
// [Store.Expire] end it when its job is over).
//
// # Signed URLs
//
// A [Grant] allows one method (GET or PUT) on one key, for one task and one agent, until an
// instant, over one byte range (GET) or up to a size (PUT). A [Signer] turns a grant into URL
// query parameters with an HMAC-SHA256 over every field and verifies them in constant time
// ([Signer.Verify]); changing any field, the method or the key makes the signature fail.
//
// [Refs] is what the agent link calls: [Refs.Fetch] returns a URL an agent GETs an input's
// bytes from, [Refs.Upload] a URL an agent PUTs an output to and the reference the result
// names. The URLs point at the gateway's blob endpoint (faces/blob) under the configured
// public base URL; with an S3 store and presign on, a fetch URL is presigned by the object
// store instead.
//
// # Task tokens
//
// A trusted agent's task gets plain URLs and one task token instead ([Refs.Scope]): a
// [Token] lists the task's [Scope]s (each read range, one upload) for one task and one
// agent until an instant, MAC'd under the same key in a domain of its own
// ([Signer.SignToken], [Signer.VerifyToken]); the endpoint accepts it as a bearer
// credential for exactly those scopes.
package blob
