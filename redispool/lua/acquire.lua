-- acquire: lease the best resource for ARGV[2] ms, for request REQUEST
-- (nothing is recorded in DONE for it: its entry in REQ is the record).
-- When the pool has waiters, or no free slot, and ARGV[3] > 0, the
-- request waits in QUEUE, its entry holding for ARGV[3] ms, and its
-- grant will be told to process ARGV[4]; the same request sent again
-- (a re-check, or go-redis resending it) keeps its place, or gets the
-- lease that it was granted meanwhile.
-- Reply: {OK, token, id, ms left of the lease}, {QUEUED, ms until the
-- server frees something by itself, or -1}, {NONE, the same} for a
-- request that does not wait, or {EMPTY} when the pool has no resource
-- at all.
local request, ttl, entry, proc = REQUEST, tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local function empty()
  return (tonumber(redis.call('HGET', RES, '#n')) or 0) == 0
end
if freed then
  serve() -- what reclaim freed goes to those who waited
end
local prior = redis.call('HGET', REQ, request)
if prior then
  if waiting(prior) then
    if empty() then
      -- Removed while this request waited (its last resources drain).
      redis.call('ZREM', QUEUE, request)
      redis.call('HDEL', REQ, request)
      return { EMPTY }
    end
    redis.call('HSET', REQ, request, 'q ' .. (now + entry) .. ' ' .. ttl .. ' ' .. proc)
    return { QUEUED, next_event() }
  end
  -- Granted: the same lease, not a second one.
  local owner = redis.call('HGET', OWNER, prior)
  if owner then
    local _, id = split_owner(owner)
    -- Written again, so that a WAIT after this reply covers the grant.
    redis.call('HSET', REQ, request, prior)
    return { OK, prior, id, redis.call('ZSCORE', LEASES, prior) - now }
  end
end
if recorded(request) then
  -- The client gave this request up (abandon ran first): whoever sent it
  -- is gone, so it takes nothing.
  return { NONE, next_event() }
end
local best = nil
if not oldest() then
  best = redis.call('ZRANGE', AVAIL, 0, 0)[1]
end
if best then
  local r = load(string.sub(best, 12))
  r.h = r.h + 1
  store(r)
  relist(r, best)
  return { OK, grant(r, request, ttl), r.id, ttl }
end
if empty() then
  return { EMPTY }
end
if entry <= 0 then
  return { NONE, next_event() }
end
redis.call('ZADD', QUEUE, redis.call('HINCRBY', RES, '#q', 1), request)
redis.call('HSET', REQ, request, 'q ' .. (now + entry) .. ' ' .. ttl .. ' ' .. proc)
return { QUEUED, next_event() }
