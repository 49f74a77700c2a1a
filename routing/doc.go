// Package routing maps JSON-RPC method names to targets and holds the targets themselves.
// The method table is built once per configuration and never changes while it serves, so
// lookups take no lock; a reload builds a new table beside the old one.
//
// routing.demo routes the example methods of the JSON-RPC 2.0 specification (subtract, sum,
// update, notify_hello, get_data; DemoMethods) to the built-in demo target so a new gateway
// answers calls at once. The target itself lives in package demo (demo.Spec); the server
// hands it to Build through BuildOptions.Demo, since routing never imports demo.
package routing
