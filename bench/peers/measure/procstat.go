// Package measure holds the benchmark's measuring: CPU time of a process from /proc, latency
// percentiles, closed- and open-loop load, and a minimal streamable-HTTP MCP client.
package measure

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// ClockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat: 100 on every Linux
// ABI Go supports (the kernel reports in USER_HZ whatever its internal HZ).
const ClockTicks = 100

// ErrStatFormat is returned for a /proc/<pid>/stat line that cannot be parsed.
var ErrStatFormat = errors.New("measure: malformed /proc stat line")

// ParseStatCPU returns utime+stime of a /proc/<pid>/stat line. The command name (field 2)
// is in parentheses and may itself hold spaces and parentheses, so fields are counted from the
// last ')'.
func ParseStatCPU(line []byte) (time.Duration, error) {
	end := bytes.LastIndexByte(line, ')')
	if end < 0 {
		return 0, fmt.Errorf("%w: no ')'", ErrStatFormat)
	}
	// After ") " come field 3 (state) onwards; utime is field 14, stime field 15.
	fields := bytes.Fields(line[end+1:])
	const utimeIdx, stimeIdx = 14 - 3, 15 - 3
	if len(fields) <= stimeIdx {
		return 0, fmt.Errorf("%w: %d fields after the command", ErrStatFormat, len(fields))
	}
	var ticks int64
	for _, i := range []int{utimeIdx, stimeIdx} {
		v, err := strconv.ParseInt(string(fields[i]), 10, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("%w: field %d = %q", ErrStatFormat, i+3, fields[i])
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / ClockTicks, nil
}

// ProcessCPU returns the user+system CPU time process pid has used so far.
func ProcessCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return ParseStatCPU(b)
}
