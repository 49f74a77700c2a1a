package state

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// cellScript is TakeCell: GET the TAT, decide, SET the new TAT with PX. ARGV: now, the
// interval T and τ, decimal nanoseconds. Returns {1 or 0, the TAT after the decision as
// text}.
//
// Unix nanoseconds do not fit a Lua number (a double, exact to 2^53), so the script
// computes on pairs {hi, lo} worth hi × 10^9 + lo with 0 ≤ lo < 10^9, exact for the whole
// int64 range. A stored value that is not the canonical decimal form of an int64 counts
// as TAT = now, as KVBuckets' decodeTAT reads it.
var cellScript = redis.NewScript(`
local B = 1000000000
local function parse(s)
  if type(s) ~= 'string' or not (s == '0' or string.match(s, '^%-?[1-9]%d*$')) then return nil end
  local neg = string.sub(s, 1, 1) == '-'
  local d = neg and string.sub(s, 2) or s
  if #d > 19 or (#d == 19 and d > (neg and '9223372036854775808' or '9223372036854775807')) then return nil end
  local hi, lo = tonumber(string.sub(d, 1, -10)) or 0, tonumber(string.sub(d, -9))
  if neg then
    hi, lo = -hi, -lo
    if lo < 0 then lo, hi = lo + B, hi - 1 end
  end
  return {hi, lo}
end
local function add(a, b)
  local hi, lo = a[1] + b[1], a[2] + b[2]
  if lo >= B then lo, hi = lo - B, hi + 1 end
  return {hi, lo}
end
local function sub(a, b)
  local hi, lo = a[1] - b[1], a[2] - b[2]
  if lo < 0 then lo, hi = lo + B, hi - 1 end
  return {hi, lo}
end
local function less(a, b)
  return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2])
end
local function text(a)
  local hi, lo, sign = a[1], a[2], ''
  if hi < 0 then
    sign = '-'
    if lo > 0 then hi, lo = -hi - 1, B - lo else hi = -hi end
  end
  if hi == 0 then return sign .. string.format('%d', lo) end
  return sign .. string.format('%.0f%09d', hi, lo)
end
local now, t, tau = parse(ARGV[1]), parse(ARGV[2]), parse(ARGV[3])
local tat = parse(redis.call('GET', KEYS[1]))
if tat == nil or less(tat, now) then tat = now end
local nxt = add(tat, t)
if less(add(now, tau), nxt) then return {0, text(tat)} end
local ttl = sub(nxt, now)
local ms = ttl[1] * 1000 + math.ceil(ttl[2] / 1000000)
redis.call('SET', KEYS[1], text(nxt), 'PX', string.format('%.0f', ms))
return {1, text(nxt)}
`)

// TakeCell implements [CellRater] with one Lua script: GET, decide, SET PX. now is the
// caller's clock, not Redis's: replicas sharing buckets need clocks in step (NTP), as a
// replica ahead by d sees buckets up to d fuller than they are.
func (r *Redis) TakeCell(ctx context.Context, key string, now time.Time, interval time.Duration, burst int64) (bool, int64, error) {
	if err := r.check(ctx, key); err != nil {
		return false, 0, err
	}
	tau, err := cellTau(interval, burst)
	if err != nil {
		return false, 0, err
	}
	res, err := cellScript.Run(ctx, r.client, []string{r.prefix + key},
		now.UnixNano(), int64(interval), tau).Slice()
	if err != nil {
		return false, 0, r.fail(ctx, err)
	}
	if len(res) != 2 {
		return false, 0, fmt.Errorf("state: redis: TakeCell script returned %d values, want 2", len(res))
	}
	allowed, _ := res[0].(int64)
	text, _ := res[1].(string)
	tat, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return false, 0, fmt.Errorf("state: redis: TakeCell script returned TAT %q: %w", text, err)
	}
	return allowed == 1, tat, nil
}
