package state

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// ErrInvalidCell is returned by [CellRater.TakeCell] for an interval or burst that is not
// positive, or an interval × burst that overflows an int64 of nanoseconds.
var ErrInvalidCell = errors.New("state: a cell rate needs a positive interval and burst, whose product fits an int64 of nanoseconds")

// cellTau returns τ = interval × burst in nanoseconds, or ErrInvalidCell.
func cellTau(interval time.Duration, burst int64) (int64, error) {
	if interval <= 0 || burst <= 0 || int64(interval) > math.MaxInt64/burst {
		return 0, fmt.Errorf("%w: interval %v, burst %d", ErrInvalidCell, interval, burst)
	}
	return int64(interval) * burst, nil
}

// TakeCell implements [CellRater] under the lock of key's shard. now is the caller's
// clock; the entry's expiry (TAT' − now from the write) runs on the store's.
func (e *Embedded) TakeCell(ctx context.Context, key string, now time.Time, interval time.Duration, burst int64) (bool, int64, error) {
	if err := e.check(ctx, key); err != nil {
		return false, 0, err
	}
	tau, err := cellTau(interval, burst)
	if err != nil {
		return false, 0, err
	}
	n, t := now.UnixNano(), int64(interval)
	var allowed bool
	var tat int64
	err = e.locked(key, func(s *shard, tick int64) error {
		en := s.live(key, tick)
		tat = n
		if en != nil {
			if v, ok := parseInt(en.value); ok && v > n {
				tat = v
			}
		}
		if tat+t-n > tau {
			return nil
		}
		next := tat + t
		var buf [20]byte
		value := strconv.AppendInt(buf[:0], next, 10)
		expires := deadline(tick, time.Duration(next-n))
		if en == nil {
			if err := e.insert(s, key, value, tick, expires); err != nil {
				return err
			}
		} else {
			en.value = overwrite(en.value, value)
			s.setExpiry(en, expires)
		}
		allowed, tat = true, next
		return nil
	})
	if err != nil {
		return false, 0, err
	}
	return allowed, tat, nil
}
