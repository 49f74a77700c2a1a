package testproc_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/testproc"
)

// fakeTB records Lookup's Fatal or Skip and ends the goroutine as testing does.
type fakeTB struct {
	testing.TB
	fatal, skip string
}

func (*fakeTB) Helper() {}

func (f *fakeTB) Fatal(args ...any) {
	f.fatal = fmt.Sprint(args...)
	runtime.Goexit()
}

func (f *fakeTB) Skip(args ...any) {
	f.skip = fmt.Sprint(args...)
	runtime.Goexit()
}

// lookup runs Lookup with a fakeTB in a goroutine of its own, as Fatal and Skip end it.
func lookup(env string, candidates ...string) (string, *fakeTB) {
	f := &fakeTB{}
	var got string
	done := make(chan struct{})
	go func() {
		defer close(done)
		got = testproc.Lookup(f, "Tool", env, "run `make tool`", candidates...)
	}()
	<-done
	return got, f
}

func TestLookup(t *testing.T) {
	const env = "TESTPROC_TEST_BIN"
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("no sh on PATH: the test runs a shell script as the tool: %v", err)
	}
	// A repository tool: a path with a slash, not on PATH.
	repoTool := filepath.Join(t.TempDir(), "tool")
	if err := os.WriteFile(repoTool, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, envValue, ci string
		candidates         []string
		want               string
		wantFatal          bool
		wantSkip           bool
	}{
		{name: "first found on PATH", candidates: []string{"testproc-no-such-binary", "sh"}, want: sh},
		{name: "repository path", candidates: []string{repoTool, "sh"}, want: repoTool},
		{name: "env overrides", envValue: repoTool, candidates: []string{"sh"}, want: repoTool},
		{name: "env missing skips", envValue: "/nonexistent/tool", candidates: []string{"sh"}, wantSkip: true},
		{name: "missing skips", candidates: []string{"testproc-no-such-binary"}, wantSkip: true},
		{name: "missing under CI fails", ci: "true", candidates: []string{"testproc-no-such-binary"}, wantFatal: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(env, tt.envValue)
			t.Setenv("CI", tt.ci)
			got, f := lookup(env, tt.candidates...)
			if got != tt.want || (f.fatal != "") != tt.wantFatal || (f.skip != "") != tt.wantSkip {
				t.Fatalf("Lookup = %q, fatal %q, skip %q; want %q, fatal %v, skip %v",
					got, f.fatal, f.skip, tt.want, tt.wantFatal, tt.wantSkip)
			}
			msg := f.fatal + f.skip
			looked := tt.candidates
			if tt.envValue != "" {
				looked = []string{tt.envValue}
			}
			if msg != "" && (!strings.Contains(msg, strings.Join(looked, ", ")) ||
				!strings.Contains(msg, "run `make tool`") || !strings.Contains(msg, env)) {
				t.Errorf("message %q: want what was looked for, the hint and %s", msg, env)
			}
		})
	}
}
