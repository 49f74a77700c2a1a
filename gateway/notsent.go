package gateway

import (
	"errors"
	"fmt"
)

// ErrNotSent is in the cause chain of an *Error for a call that failed before its request
// reached the backend: no connection took it (refused, or none ready), or no session was
// live to carry it. Such a call has not run anywhere, so running it again cannot run it
// twice; the retry stage (resilience) retries no other failure. A target marks an error
// with NotSent only when it knows the request never left; when in doubt (a connection that
// broke after the request was written) it does not. Test for it with errors.Is.
var ErrNotSent = errors.New("the request was not sent to the backend")

// NotSent returns a copy of e marked with ErrNotSent; e's cause stays in the chain behind
// the mark. Wrap replaces the cause, mark and all, so call NotSent after Wrap.
func (e *Error) NotSent() *Error {
	c := *e
	c.cause = ErrNotSent
	if e.cause != nil {
		c.cause = fmt.Errorf("%w: %w", ErrNotSent, e.cause)
	}
	return &c
}
