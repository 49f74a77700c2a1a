// Package routing maps JSON-RPC method names to targets and holds the targets themselves.
// The method table is built once per configuration and never changes while it serves, so
// lookups take no lock; a reload builds a new table beside the old one.
//
// routing.demo routes the example methods of the JSON-RPC 2.0 specification (subtract, sum,
// update, notify_hello, get_data; DemoMethods) to the built-in demo target so a new gateway
// answers calls at once. The target itself lives in package demo (demo.Spec); the server
// hands it to Build through BuildOptions.Demo, since routing never imports demo.
//
// Table.MCP names the MCP bridge's target among those the table routes, so that no
// package outside routing looks for it by its concrete type.
//
// Routing owns the table, the one capability catalog with its per-caller visibility
// (capability/) and the targets (grpcbackend/, mcpbackend/, nekte/). It and its
// sub-packages import only schemas, codecs, gateway and state of the module (and each
// other): what they need of a sibling — the policy engine's decision, the pipeline a
// routed call runs through — the server hands them as an interface or a function.
package routing
