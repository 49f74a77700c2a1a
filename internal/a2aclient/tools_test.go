package a2aclient

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/testproc"
)

// TestPins: package.json and package-lock.json pin the SDK the Go side expects.
func TestPins(t *testing.T) { testproc.CheckNPMPins(t, ".", "@a2a-js/sdk", SDKVersion) }
