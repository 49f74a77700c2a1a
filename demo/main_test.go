package demo_test

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/mcptest"
)

// TestMain fails the package if goroutines outlive its tests. Both former checks were
// plain goleak (no ignores): the calculator's goleak.VerifyTestMain and the MCP fixture's
// mcptest.VerifyMain, which is goleak.Find retried for up to 5 s (an mcp-go session's
// goroutines take a moment to end). The latter covers both.
func TestMain(m *testing.M) { mcptest.VerifyMain(m) }
