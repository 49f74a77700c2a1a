package mcpbackend_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/benchutil"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
)

// BenchmarkToolCall compares a cheap tool call (the fixture's echo over stdio) through
// the Bridge with a direct mcp-go client to the same kind of child, at 1 and 32
// concurrent callers sharing one session.
func BenchmarkToolCall(b *testing.B) {
	args := json.RawMessage(`{"message":"ping"}`)
	callers := []int{1, 32}
	b.Run("bridge", func(b *testing.B) {
		br, logs := start(b, []mcpbackend.Config{fixture("fx", nil)})
		defer func() {
			if b.Failed() {
				b.Log(logs.String())
			}
		}()
		for _, c := range callers {
			b.Run("c"+strconv.Itoa(c), func(b *testing.B) {
				benchutil.Callers(b, c, func(ctx context.Context) error {
					_, err := br.CallTool(ctx, "echo", args)
					return err
				})
			})
		}
	})
	b.Run("direct", func(b *testing.B) {
		cli, err := client.NewStdioMCPClient(fixtureBin, []string{"FIXTURE_NAME=fx"})
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = cli.Close() }()
		req := mcp.InitializeRequest{}
		req.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
		if _, err := cli.Initialize(context.Background(), req); err != nil {
			b.Fatal(err)
		}
		for _, c := range callers {
			b.Run("c"+strconv.Itoa(c), func(b *testing.B) {
				benchutil.Callers(b, c, func(ctx context.Context) error {
					r := mcp.CallToolRequest{}
					r.Params.Name, r.Params.Arguments = "echo", args
					_, err := cli.CallTool(ctx, r)
					return err
				})
			})
		}
	})
}
