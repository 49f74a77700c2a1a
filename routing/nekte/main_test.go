package nekte_test

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/mcptest"
)

// fixtureBin is routing/mcpbackend's MCP fixture server, built once by TestMain.
var fixtureBin string

func TestMain(m *testing.M) { mcptest.Main(m, "../mcpbackend/testdata/fixture", &fixtureBin) }
