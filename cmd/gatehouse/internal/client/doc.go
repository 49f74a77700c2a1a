// Package client is the logic of gatehouse's client commands (call, discover, delegate,
// chat and the admin commands): the JSON-RPC transports (HTTP, WebSocket, Server-Sent
// Events), the session RPC's event stream, the exit code of each class of error, and
// what is printed on a terminal and in a pipe. The command-line parsing lives in
// cmd/gatehouse (client*.go); docs/cli.md describes the commands.
package client
