package resilience

import (
	"context"
	"errors"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Verdict is what the end of one call says about the backend it reached.
type Verdict uint8

// Verdicts.
const (
	// VerdictHealthy: the backend answered — with a result, or with an error of the
	// caller's making. It counts in the breaker's window as a success.
	VerdictHealthy Verdict = iota
	// VerdictFaulty: a backend fault. It counts in the breaker's window as a failure.
	VerdictFaulty
	// VerdictIgnored: the call says nothing about the backend (the caller went away, the
	// gateway refused it before sending, its deadline was too short to judge). It is left
	// out of the window.
	VerdictIgnored
)

var verdictNames = [...]string{"healthy", "faulty", "ignored"}

// String returns the verdict's name.
func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return "unknown"
}

// Judge returns the verdict on a call that ended with err, run under ctx and sent with
// sentWith left of its deadline, for a breaker whose timeout budget is timeoutBudget:
//
//	the call's context was cancelled (the caller left)     ignored
//	nil                                                     healthy
//	CANCELLED                                               ignored
//	UNAVAILABLE, DEPENDENCY_FAILED, INTERNAL_ERROR          faulty
//	DEADLINE_EXCEEDED, sent with ≥ timeoutBudget left       faulty
//	DEADLINE_EXCEEDED, sent with less                       ignored
//	any other code, sent by the backend (Error.IsWire)      healthy
//	any other code, made by the gateway                     ignored
//
// The other codes are the caller's mistakes (invalid params, unknown method, missing scope,
// rate limits, a tool reporting failure, a task's own outcome): a backend that answers
// with one is alive, and one the gateway made before sending says nothing. A deadline the
// caller set short cannot open a breaker for everyone else, which is what timeoutBudget is
// for; set it near the backend's slowest normal latency. An error that is not an
// *gateway.Error is judged as gateway.AsError maps it.
func Judge(ctx context.Context, err error, sentWith, timeoutBudget time.Duration) Verdict {
	if errors.Is(ctx.Err(), context.Canceled) {
		return VerdictIgnored
	}
	if err == nil {
		return VerdictHealthy
	}
	e := gateway.AsError(err)
	switch e.Code() {
	case schemas.CodeCancelled:
		return VerdictIgnored
	case schemas.CodeUnavailable, schemas.CodeDependencyFailed, schemas.CodeInternal:
		return VerdictFaulty
	case schemas.CodeDeadlineExceeded:
		if sentWith < timeoutBudget {
			return VerdictIgnored
		}
		return VerdictFaulty
	}
	if e.IsWire() {
		return VerdictHealthy
	}
	return VerdictIgnored
}

// timeLeft returns how long ctx has until its deadline; a context without one has all the
// time there is.
func timeLeft(ctx context.Context) time.Duration {
	dl, ok := ctx.Deadline()
	if !ok {
		return time.Duration(1<<63 - 1)
	}
	return time.Until(dl)
}
