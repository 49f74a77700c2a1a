package resilience

import (
	"context"
	"fmt"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// DeadlineConfig is the deadline section of the configuration file.
//
// Every call has an absolute deadline: the caller's (the X-Deadline-Ms header or
// params.deadline_ms, epoch milliseconds), else now + Default; never later than now + Max.
// A call with less than MinRemaining left is refused before any work is done. Every hop to a
// backend sends the deadline on less Reserve, kept for the response's trip back, and is not
// attempted when less than MinRemaining would be left of it (gateway.HopBudget).
type DeadlineConfig struct {
	// Default is the time a call may take when the caller names no deadline.
	Default time.Duration `yaml:"default" json:"default,omitempty"`
	// Max caps any deadline a caller asks for.
	Max time.Duration `yaml:"max" json:"max,omitempty"`
	// MinRemaining (ε) is the least useful time left: below it a call is refused at once.
	MinRemaining time.Duration `yaml:"min_remaining" json:"min_remaining,omitempty"`
	// Reserve is kept back from the call's deadline on every hop for the response's trip
	// back: a backend is sent the deadline less Reserve (a gRPC backend's own
	// deadline_reserve overrides it). At most MaxReserve.
	Reserve time.Duration `yaml:"reserve" json:"reserve,omitempty"`
}

// Default deadline settings.
const (
	DefaultDeadline     = 30 * time.Second
	DefaultMaxDeadline  = 5 * time.Minute
	DefaultMinRemaining = 50 * time.Millisecond
	DefaultReserve      = 5 * time.Millisecond
	// MaxReserve bounds Reserve (and a backend's deadline_reserve).
	MaxReserve = gateway.MaxReserve
)

// WithDefaults returns c with zero fields set to their defaults.
func (c DeadlineConfig) WithDefaults() DeadlineConfig {
	if c.Default == 0 {
		c.Default = DefaultDeadline
	}
	if c.Max == 0 {
		c.Max = DefaultMaxDeadline
	}
	if c.MinRemaining == 0 {
		c.MinRemaining = DefaultMinRemaining
	}
	if c.Reserve == 0 {
		c.Reserve = DefaultReserve
	}
	return c
}

// Validate reports the relations between the section's fields it breaks, with defaults
// applied: default no longer than max, min_remaining shorter than default, reserve at most
// MaxReserve and, with min_remaining, shorter than default. Paths are relative to the
// section ("min_remaining").
func (c DeadlineConfig) Validate() []ConfigError {
	c = c.WithDefaults()
	var errs []ConfigError
	bad := func(path, format string, args ...any) {
		errs = append(errs, ConfigError{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	if c.Default > c.Max {
		bad("default", "default (%s) is longer than max (%s)", c.Default, c.Max)
	}
	if c.MinRemaining >= c.Default {
		bad("min_remaining", "min_remaining (%s) must be shorter than default (%s)", c.MinRemaining, c.Default)
	}
	if c.Reserve > MaxReserve {
		bad("reserve", "reserve (%s) is longer than %s", c.Reserve, MaxReserve)
	}
	if c.Reserve+c.MinRemaining >= c.Default {
		bad("reserve", "reserve + min_remaining (%s) must be shorter than default (%s)", c.Reserve+c.MinRemaining, c.Default)
	}
	return errs
}

// Budget returns what each hop of a call keeps back from its deadline.
func (c DeadlineConfig) Budget() gateway.HopBudget {
	return gateway.HopBudget{Reserve: c.Reserve, MinRemaining: c.MinRemaining}
}

// Resolve returns the absolute deadline for a request (or a whole batch) that arrived at
// now, given the caller's deadline in epoch milliseconds (0 when none was sent).
func (c DeadlineConfig) Resolve(now time.Time, callerMs int64) time.Time {
	limit := now.Add(c.Max)
	if callerMs <= 0 {
		return earliest(now.Add(c.Default), limit)
	}
	return earliest(time.UnixMilli(callerMs), limit)
}

// Narrow returns the deadline of one batch member: the member may shorten the batch's
// deadline with params.deadline_ms but never extend it.
func Narrow(batch time.Time, memberMs int64) time.Time {
	if memberMs <= 0 {
		return batch
	}
	return earliest(batch, time.UnixMilli(memberMs))
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// Deadline returns the deadline stage: it refuses a call whose remaining time is below
// MinRemaining with DEADLINE_EXCEEDED (error.data.layer = "boundary") and otherwise runs the
// rest of the pipeline under a context bounded by the call's deadline and carrying the hop
// budget (Reserve, MinRemaining) every target applies to its own hop. A context that ends
// by the call's deadline already is not bounded again. The bound is gateway.WithCallDeadline's:
// a call whose only wait is a hop bounded by its own, earlier deadline starts no timer here.
func Deadline(cfg DeadlineConfig, now func() time.Time) gateway.Middleware {
	cfg = cfg.WithDefaults()
	budget := cfg.Budget()
	return func(next gateway.Handler) gateway.Handler {
		return func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
			if call.Deadline.IsZero() {
				call.Deadline = cfg.Resolve(now(), 0)
			}
			remaining := call.Deadline.Sub(now())
			if remaining < cfg.MinRemaining {
				return nil, gateway.ErrDeadline(gateway.LayerBoundary).
					With("remaining_ms", max(remaining.Milliseconds(), 0)).
					With("min_remaining_ms", cfg.MinRemaining.Milliseconds())
			}
			ctx = gateway.WithHopBudgetFor(ctx, call, &budget)
			if dl, ok := ctx.Deadline(); ok && !dl.After(call.Deadline) {
				// ctx ends by the call's deadline already (a batch's members share their
				// batch's deadline context): no context, and no timer, of the call's own.
				return next(ctx, call)
			}
			ctx, cancel := gateway.WithCallDeadline(ctx, call.Deadline) // its timer only when waited on
			res, err := next(ctx, call)
			if res != nil && res.Stream != nil {
				res.Stream = gateway.AfterClose(res.Stream, cancel) // the stream runs under the deadline
				return res, err
			}
			cancel()
			return res, err
		}
	}
}
