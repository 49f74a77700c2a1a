// Package conformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, `conformance server --url …`) against an MCP
// endpoint and judges the outcome against a file of expected failures.
//
// The suite and the Node it needs (≥ 22) are pinned in package.json and package-lock.json
// beside this file and installed under .tmp/conformance by `make conformance-tools`;
// Tools.Check refuses an installation whose versions differ from the pins. Run executes
// the suite with its results written per scenario (checks.json), which this package
// reads instead of the suite's console output.
//
// A scenario passes when it produced at least one check and every check is SUCCESS or
// INFO; a WARNING counts as a failure, as in the suite's own --expected-failures baseline.
// Compare then holds the results against expected-failures.txt (one scenario per line,
// the reason after a '#'): a failure not listed, a listed scenario that now passes, and a
// listed name the suite does not know all make the verdict fail, so the file stays honest.
//
// ServeFixture serves the demo MCP fixture server (demo.MCP) on loopback for the suite to
// test; cmd/conformance runs the whole flow and cmd/fixture serves the fixture alone.
package conformance
