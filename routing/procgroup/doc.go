// Package procgroup starts the child processes of targets (an MCP server over stdio, a
// session upstream's command) in a process group of their own and signals the group, so
// a child and everything it spawned (npx → node, sh → server) stop together.
package procgroup
