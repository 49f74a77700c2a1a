package consoletest

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/testproc"
)

// TestPins: package.json and package-lock.json pin the playwright-core the Go side expects.
func TestPins(t *testing.T) {
	testproc.CheckNPMPins(t, ".", "playwright-core", PlaywrightVersion)
}
