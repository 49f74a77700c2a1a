package testproc

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrExited reports a process that exited before it was ready. A harness typically starts
// it again on fresh ports: another process may have taken one of its free ports meanwhile.
var ErrExited = errors.New("process exited before it was ready")

// WaitReady calls ready every interval until it returns nil while the process runs, and
// then returns nil. When the process exits first it returns an error wrapping [ErrExited]
// with the exit state; when ctx ends first, one wrapping ctx's error with ready's last
// error. Both errors end with the tail of the log.
func (p *Process) WaitReady(ctx context.Context, interval time.Duration, ready func(ctx context.Context) error) error {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		err := ready(ctx)
		// A check that passed may have reached another program on the port the process
		// failed to take: ready only while the process runs.
		if p.exited() {
			return p.exitedError()
		}
		if err == nil {
			return nil
		}
		select {
		case <-p.done:
			return p.exitedError()
		case <-ctx.Done():
			return fmt.Errorf("%w; last check: %w\n%s", ctx.Err(), err, p.Tail(TailLimit))
		case <-ticker.C:
		}
	}
}

// exitedError wraps ErrExited with the exit state and the log's tail.
func (p *Process) exitedError() error {
	return fmt.Errorf("%w (%s)\n%s", ErrExited, p.cmd.ProcessState, p.Tail(TailLimit))
}
