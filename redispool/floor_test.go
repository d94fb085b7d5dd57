package redispool

// The floor of BenchmarkVersusLock (versus_test.go): plain scripts that
// keep the guarantees issue 30 asks the pool to keep, and nothing else.
// It shows how much of the pool's cost against the plain lock those
// guarantees take, and how much the rest of the pool (health, limits,
// suspension, the owner map, the counters of Stats, waiting itself)
// adds.
//
// What it keeps, on resources of equal priority:
//   - priority order: the resources with a free slot are a sorted set,
//     best first;
//   - capacity: each resource's holders are counted, and a resource
//     leaves the set when its last slot is taken (capacity 1 here);
//   - TTL reclaim: each call first ends the leases past their deadline,
//     and the suspensions that are over;
//   - fencing: a counter gives each grant its token;
//   - the fair queue: an acquire grants nothing while the queue has a
//     waiter, and a release looks for the oldest one to hand to;
//   - idempotent writes: an acquire looks up its request (a retry gets
//     its lease) and the record of its abandonment, and notes its
//     lease under its request; a release deletes that note and records
//     its outcome for its window.
//
// It never queues: an acquire that finds nothing returns nil, and the
// contender sleeps a millisecond and tries again, as the plain lock
// does. So it runs only the workloads without holds, where the rate is
// the server's cost per operation.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// floorLibrary is the floor's FUNCTION library. KEYS: 1 resources with
// a free slot (zset), 2 leases (zset: TOKEN:REQUEST:ID -> deadline,
// ms), 3 the fencing counter, 4 suspensions (zset, always empty here),
// 5 the queue (zset, always empty here), 6 requests (hash: request ->
// token), 7 holders (hash: ID -> count), 8 the call's record.
const floorLibrary = `#!lua name=crs_versus_floor
local function now_ms()
  local t = redis.call('TIME')
  return t[1] .. string.sub(string.rep('0', 6 - #t[2]) .. t[2], 1, 3)
end
-- free gives back a slot of resource id.
local function free(keys, id)
  redis.call('HINCRBY', keys[7], id, '-1')
  redis.call('ZADD', keys[1], '0', id)
end
local function reclaim(keys, now)
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', keys[2], '-inf', now)) do
    redis.call('ZREM', keys[2], m)
    free(keys, string.match(m, ':([^:]*)$'))
  end
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', keys[4], '-inf', now)) do
    redis.call('ZREM', keys[4], id)
    if tonumber(redis.call('HGET', keys[7], id) or '0') < 1 then
      redis.call('ZADD', keys[1], '0', id)
    end
  end
end
-- ARGV: lease TTL (ms), request. Reply: {token, id}, or nil.
redis.register_function('crs_versus_floor_acquire', function(keys, argv)
  local now = now_ms()
  reclaim(keys, now)
  if redis.call('HGET', keys[6], argv[2]) or redis.call('GET', keys[8])
    or redis.call('ZRANGE', keys[5], '0', '0')[1] then
    return nil
  end
  local best = redis.call('ZRANGE', keys[1], '0', '0')[1]
  if not best then
    return nil
  end
  if redis.call('HINCRBY', keys[7], best, '1') >= 1 then -- its capacity
    redis.call('ZREM', keys[1], best)
  end
  local token = tostring(redis.call('INCR', keys[3]))
  redis.call('ZADD', keys[2], string.format('%d', tonumber(now) + tonumber(argv[1])), token .. ':' .. argv[2] .. ':' .. best)
  redis.call('HSET', keys[6], argv[2], token)
  return { token, best }
end)
-- ARGV: the lease (TOKEN:REQUEST:ID), its request, its resource, the
-- record's window (ms). Reply: 1, or 0 for a lease that had ended.
redis.register_function('crs_versus_floor_release', function(keys, argv)
  reclaim(keys, now_ms())
  local ended = redis.call('ZREM', keys[2], argv[1]) == 1
  if ended then
    redis.call('HDEL', keys[6], argv[2])
    if not redis.call('ZRANGE', keys[5], '0', '0')[1] then
      free(keys, argv[3])
    end
  end
  redis.call('SET', keys[8], ended and '1' or '0', 'PX', argv[4])
  return ended and 1 or 0
end)
`

// floorContender runs the floor's library under the name of its state.
type floorContender struct {
	c      *redis.Client
	prefix string   // of every key: "{NAME}:"
	keys   []string // the library's KEYS but the record
	ttl    int64    // ms
}

// openFloor loads the library and, on first use, lists resources
// 0 .. resources-1, free.
func openFloor(ctx context.Context, c *redis.Client, name string, resources int) (floorContender, error) {
	if err := c.FunctionLoadReplace(ctx, floorLibrary).Err(); err != nil {
		return floorContender{}, fmt.Errorf("floor: FUNCTION LOAD: %w", err)
	}
	f := floorContender{c: c, prefix: "{" + name + "}:", ttl: DefaultLeaseTTL.Milliseconds()}
	for _, k := range []string{"free", "leases", "token", "susp", "queue", "req", "holders"} {
		f.keys = append(f.keys, f.prefix+k)
	}
	if n, err := c.Exists(ctx, f.keys[1], f.keys[0]).Result(); err != nil || n > 0 {
		return f, err
	}
	for from := 0; from < resources; from += 1000 {
		var free []redis.Z
		for i := from; i < min(from+1000, resources); i++ {
			free = append(free, redis.Z{Member: strconv.Itoa(i)})
		}
		if err := c.ZAdd(ctx, f.keys[0], free...).Err(); err != nil {
			return f, err
		}
	}
	return f, nil
}

// call runs fn with the keys and the record of request.
func (f floorContender) call(ctx context.Context, fn, request string, args ...any) *redis.Cmd {
	keys := append(f.keys[:len(f.keys):len(f.keys)], f.prefix+"done:"+request)
	return f.c.FCall(ctx, fn, keys, args...)
}

func (f floorContender) acquire(ctx context.Context) (grant, error) {
	for {
		request := newRequest()
		reply, err := f.call(ctx, "crs_versus_floor_acquire", request, f.ttl, request).StringSlice()
		if errors.Is(err, redis.Nil) {
			if err := ctx.Err(); err != nil {
				return grant{}, err
			}
			time.Sleep(time.Millisecond)
			continue
		}
		if err != nil {
			return grant{}, fmt.Errorf("floor: acquire: %w", err)
		}
		r, err := strconv.Atoi(reply[1])
		if err != nil {
			return grant{}, fmt.Errorf("floor: acquire: resource %q", reply[1])
		}
		return grant{resource: r, token: reply[0] + ":" + request + ":" + reply[1]}, nil
	}
}

func (f floorContender) release(ctx context.Context, g grant) error {
	parts := strings.Split(g.token, ":")
	n, err := f.call(ctx, "crs_versus_floor_release", newRequest(), g.token, parts[1], parts[2], requestWindowMs).Int64()
	if err != nil {
		return fmt.Errorf("floor: release %d: %w", g.resource, err)
	}
	if n != 1 {
		return fmt.Errorf("floor: release %d: the lease had ended", g.resource)
	}
	return nil
}

func (f floorContender) held(ctx context.Context) (int, error) {
	n, err := f.c.ZCard(ctx, f.keys[1]).Result()
	return int(n), err
}
