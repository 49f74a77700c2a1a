// Package mcpmatrix proves the MCP version matrix with real peers on both sides: clients
// and servers of three SDKs — the TypeScript SDK (@modelcontextprotocol/sdk for 2025-11-25,
// @modelcontextprotocol/client and /server v2 for 2026-07-28), the Go SDK
// (github.com/modelcontextprotocol/go-sdk) and mcp-go — each at 2025-11-25 and 2026-07-28,
// every client against every server through two gateway replicas sharing a real Redis, a
// client's requests alternating between the replicas. Each cell runs tools (with
// progress), resources, prompts, a sampling and an elicitation round trip and a task; the
// table of cells the gateway cannot pass yet (pendingCells in the test) is one place, one
// line per kind of cell.
//
// The Node peers are pinned, with Node itself, in package.json and package-lock.json
// beside this file and installed by `make mcpmatrix-tools` under .tmp/mcpmatrix; [Tools]
// checks an installation against the pins. Without it the test skips, unless
// CONFORMANCE_REQUIRED is set (as `make test` sets it), as internal/conformance does. The
// Node scripts (node/servers.cjs, node/clients.cjs) run one process per kind, reused by
// every cell, bound to 127.0.0.1. MCPMATRIX_TOOLS names another installation;
// MCPMATRIX_STEP_TIMEOUT_MS (default 5000) bounds each step of a cell, on both sides.
package mcpmatrix
