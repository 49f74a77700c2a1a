package sessions

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.VerifyMain(m) // goleak, patient with mcp-go's asynchronously stopped goroutines
}
