//go:build unix

package procgroup_test

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/routing/procgroup"
)

// TestTerminateStopsTheGroup: a shell and the process it spawned stop together.
func TestTerminateStopsTheGroup(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & echo $!; wait")
	procgroup.Set(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	grandchild, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatalf("grandchild pid %q: %v", buf[:n], err)
	}
	if err := procgroup.Terminate(cmd); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(grandchild, 0) == nil { // a zombie until reaped by init: gone from the group's signals
		if time.Now().After(deadline) {
			t.Fatalf("the spawned process %d outlived its group's SIGTERM", grandchild)
		}
		if s, err := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(grandchild)).Output(); err != nil || strings.HasPrefix(strings.TrimSpace(string(s)), "Z") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := procgroup.Kill(cmd); err != nil && !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("Kill of a finished group: %v", err)
	}
}
