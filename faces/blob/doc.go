// Package blobface is the gateway's blob endpoint, mounted on the boundary listener under
// /blobs/: the bytes of DataRefs (state/blob) travel through it.
//
//   - GET /blobs/KEY?task=…&agent=…&exp=…&off=…&len=…&sig=… reads an object through a URL
//     the gateway signed (blob.Refs.Fetch). A Range header (one range, bytes=a-b, a- or -n)
//     must stay within the granted range; without one the whole grant is served.
//   - GET /blobs/KEY without a signature, with a credential (Authorization) holding the
//     read scope (blobs.read_scope), reads the object as an authenticated caller: how a
//     caller reads an agent's output ref. A Range header works as above, within the object.
//   - GET /blobs/KEY without a query, with "Authorization: Bearer <task token>"
//     (blob.TokenPrefix; blob.Refs.Scope, issued to trusted agents) reads a range the token
//     grants on KEY: the first of its ranges that holds the Range header, or without one the
//     first. PUT /blobs/KEY with a token writes the upload it grants. A token is never
//     accepted for another key or method, after its expiry, or with a signed query.
//   - PUT /blobs/KEY?… writes an object through a signed URL (blob.Refs.Upload): at most
//     the granted size, once per key.
//   - POST /blobs/ uploads an object as an authenticated caller holding the write scope
//     (blobs.write_scope): the answer names its DataRef, size and SHA-256.
//
// Every refusal is the gateway's JSON error body (faces.WriteHTTPError) with an HTTP
// status that says what went wrong: 401 for a URL or task token that is unsigned, malformed,
// tampered with or expired (or a caller without a valid credential), 403 for a caller
// without the scope or a token that does not grant the key and method, 400 for a token with
// a signed query,
// 404 for a missing object, 409 for a key written already, 413 past a size limit, 416 for
// a range outside the grant or the object.
package blobface
