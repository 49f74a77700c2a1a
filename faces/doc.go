// Package faces is the shared exchange of every face: it turns bytes into calls, runs them
// through the pipeline of the configuration in force, and turns their outcomes back into
// bytes. Each protocol is a sub-package (faces/httprpc, faces/ws, faces/mcp, faces/grpc,
// faces/admin) that owns its transport and nothing else; none imports another.
//
// A face sees the gateway through Runtime — the pipeline of one configuration, its
// authenticator, and Release — and hands the pipeline an Exchange: what it knows of one
// body before decoding it, plus optional delivery interfaces (StreamDeliverer,
// EventDeliverer, ProgressDeliverer, MetadataDeliverer, InputDeliverer) found by type
// assertion on Exchange.Delivery.
//
// The package owns the jsonrpc and batch sections of the configuration (JSONRPCConfig,
// BatchConfig: decoder limits, body and collected-result bounds, batch sizes per tier and
// their concurrency), which the Pipeline applies on every face.
//
// faces imports schemas, codecs, gateway, state and the middle row (auth, resilience,
// routing, observability); it never imports a face or the server.
package faces
