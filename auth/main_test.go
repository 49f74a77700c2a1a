package auth_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: the JWKS refreshers and the key
// ring's rotation loop stop on Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
