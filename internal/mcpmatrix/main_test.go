package mcpmatrix_test

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.VerifyMain(m) // goleak, patient with the SDKs' asynchronously stopped goroutines
}
