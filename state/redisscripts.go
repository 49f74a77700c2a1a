package state

import "github.com/redis/go-redis/v9"

// The Redis backend's Lua scripts. Each touches only KEYS[1], so it runs on Redis Cluster;
// go-redis sends EVALSHA and falls back to EVAL when the server does not have the script.
// Lua numbers are doubles, exact only to 2^53: integers that may be larger travel as text.

// casScript is CompareAndSwap. ARGV: whether oldValue is non-nil ("1"/"0"), oldValue,
// whether newValue is non-nil, newValue, ttl in ms. Returns 1 if it swapped, else 0.
var casScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if ARGV[1] == '1' then
  if cur ~= ARGV[2] then return 0 end
elseif cur then
  return 0
end
if ARGV[3] == '1' then
  redis.call('SET', KEYS[1], ARGV[4], 'PX', ARGV[5])
elseif cur then
  redis.call('DEL', KEYS[1])
end
return 1
`)

// notIntegerCode starts the error incrScript returns when INCRBY refuses the value or the
// sum.
const notIntegerCode = "NOTINTEGER"

// incrScript is Incr. ARGV: delta, ttl in ms. INCRBY, then a TTL only for a key that has
// none (the key it just created; PEXPIRE NX does the same from Redis 7 on). Returns the sum
// as text, read back with GET, since a Lua number would round it.
var incrScript = redis.NewScript(`
local r = redis.pcall('INCRBY', KEYS[1], ARGV[1])
if type(r) == 'table' and r.err then
  return redis.error_reply('` + notIntegerCode + ` ' .. r.err)
end
if redis.call('PTTL', KEYS[1]) == -1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return redis.call('GET', KEYS[1])
`)
