// Command peers runs Gatehouse beside the peers users would pick instead (grpc-gateway v2 for
// JSON→gRPC, ToolHive vMCP for MCP) on the same backends, and writes docs/benchmarks-peers.md.
//
//	peers run [flags]     measure and write the page (what `make bench-peers` runs)
//	peers render [flags]  write the page again from a run's raw results (-json)
//	peers backend         the gRPC backend: demo calculator + echo service
//	peers grpcgw          grpc-gateway in front of the backend
//	peers floor           net/http + grpc-go doing the least per small call (the fronts' floor)
//	peers mcpup           the MCP upstream (streamable HTTP)
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: peers run|render|backend|grpcgw|floor|mcpup [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = run(os.Args[2:])
	case "render":
		err = render(os.Args[2:])
	case "backend":
		err = runBackend(os.Args[2:])
	case "grpcgw":
		err = runGRPCGateway(os.Args[2:])
	case "floor":
		err = runFloor(os.Args[2:])
	case "mcpup":
		err = runMCPUpstream(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}
