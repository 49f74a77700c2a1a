package testproc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Lookup returns the absolute path of the binary of the program name: $env when it is set, else the
// first of candidates found (a bare name on PATH, a path with a slash as is). When none is
// found it fails the test under CI (the variable CI set) and skips it elsewhere, with a
// message naming what was looked for, hint (how to install it, e.g. "run `make redis-tools`")
// and env.
func Lookup(t testing.TB, name, env, hint string, candidates ...string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		candidates = []string{p}
	}
	for _, c := range candidates {
		if p, err := exec.LookPath(c); err == nil {
			// Absolute, so that a process started in another directory finds it too.
			if abs, err := filepath.Abs(p); err == nil {
				return abs
			}
			return p
		}
	}
	msg := fmt.Sprintf("%s is not installed (looked for %s): %s or set %s", name, strings.Join(candidates, ", "), hint, env)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}
