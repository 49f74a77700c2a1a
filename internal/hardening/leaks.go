package hardening

import (
	"regexp"
	"strings"
)

// internalDetail matches what a message to a caller must never carry: Go source
// positions, stack traces and runtime frames, panics, heap addresses, file-system paths
// of the build or the machine, and credentials.
var internalDetail = regexp.MustCompile(`\.go:\d+|goroutine \d+|runtime\.|panic|0x[0-9a-f]{8,}|/(home|root|work|tmp|usr|proc)/|(?i)bearer [a-z0-9._-]{8,}|-----BEGIN`)

// Leaks reports what in msg is internal detail a caller must not see: a match of
// internalDetail, or any of secrets (backend addresses, tokens, keys the test knows the
// gateway holds). Empty means nothing leaked.
func Leaks(msg string, secrets ...string) []string {
	found := internalDetail.FindAllString(msg, -1)
	for _, s := range secrets {
		if s != "" && strings.Contains(msg, s) {
			found = append(found, s)
		}
	}
	return found
}
