package helm_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that loading the rendered configurations leaves no goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
