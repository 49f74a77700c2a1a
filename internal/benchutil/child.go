package benchutil

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// StartChild runs this test binary again as a child process running only test (a
// Test function that serves something while env is set to "1" and skips otherwise),
// stopped by closing its stdin when the benchmark ends, and returns its pid and the first
// line it prints (typically its address). The rest of its output is discarded.
func StartChild(b *testing.B, test, env string) (pid int, line string) {
	b.Helper()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^"+test+"$", "-test.count=1") //nolint:gosec // this test binary, re-run
	cmd.Env = append(os.Environ(), env+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = stdin.Close()
		if err := cmd.Wait(); err != nil {
			b.Errorf("%s child: %v", test, err)
		}
	})
	line, err = bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("%s child: reading its first line: %v", test, err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }() // the rest of the test binary's output
	return cmd.Process.Pid, strings.TrimSpace(line)
}

// clockTick is the unit of /proc/<pid>/stat's times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// ProcessCPU is the user and system CPU time process pid has used, from /proc/<pid>/stat
// (utime and stime, fields 14 and 15, in clock ticks of 10 ms): Linux only.
func ProcessCPU(pid int) (time.Duration, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which is in parentheses and may hold spaces;
	// state is field 3, the first of them.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, stat)
	}
	var ticks int64
	for _, f := range []int{14 - 3, 15 - 3} {
		n, err := strconv.ParseInt(fields[f], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat field %d: %w", pid, f+3, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}
