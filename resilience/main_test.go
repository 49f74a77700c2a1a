package resilience_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when any goroutine outlives them: the stages wait on
// timers, queues and stores, and none of those waits may leak.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
