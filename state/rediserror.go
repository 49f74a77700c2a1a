package state

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// unavailableMessage is the client-safe message of an unreachable store.
const unavailableMessage = "state store unavailable"

// fail maps an error of a go-redis call made with ctx to the errors of [KV]: nil stays
// nil; a done ctx, or a timeout at ctx's deadline, gives the context's error; a client
// closed by Close gives [ErrClosed]; OOM gives [ErrFull]; an unreachable store gives
// [Unavailable]; anything else is wrapped.
func (r *Redis) fail(ctx context.Context, err error) error {
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case isTimeout(err) && deadlinePassed(ctx):
		// The socket deadline was the caller's, and fired a moment before ctx's own timer.
		return context.DeadlineExceeded
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case r.closed.Load() && errors.Is(err, redis.ErrClosed):
		return ErrClosed
	case redis.IsOOMError(err):
		return fmt.Errorf("%w: redis: %w", ErrFull, err)
	case unreachable(err):
		return Unavailable(err)
	default:
		return fmt.Errorf("state: redis: %w", err)
	}
}

// deadlinePassed reports whether ctx has a deadline that is now past.
func deadlinePassed(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// unreachable reports whether err means that Redis could not serve the command: every
// error that is not a reply (network, pool, Sentinel or Cluster discovery errors), and the
// replies of a server that cannot serve now (LOADING, CLUSTERDOWN, TRYAGAIN, MASTERDOWN,
// READONLY after a failover, max clients, BUSY script, failed authentication).
func unreachable(err error) bool {
	if _, reply := errors.AsType[redis.Error](err); !reply {
		return true
	}
	return redis.IsLoadingError(err) || redis.IsClusterDownError(err) || redis.IsTryAgainError(err) ||
		redis.IsMasterDownError(err) || redis.IsReadOnlyError(err) || redis.IsMaxClientsError(err) ||
		redis.IsAuthError(err) || redis.HasErrorPrefix(err, "BUSY")
}

// Unavailable returns the error of a store that could not be reached because of cause: a
// -32020 UNAVAILABLE [gateway.Error] (HTTP 503) whose message carries no detail, wrapping
// [ErrUnavailable] and cause for logs and errors.Is.
func Unavailable(cause error) error {
	return gateway.Errorf(schemas.CodeUnavailable, unavailableMessage).
		Wrap(fmt.Errorf("%w: %w", ErrUnavailable, cause))
}
