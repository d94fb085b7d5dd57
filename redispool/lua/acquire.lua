-- acquire: lease the best resource for ARGV[2] ms, for request ARGV[3]
-- (nothing is recorded in DONE for it: the lease in REQ is the record).
-- Reply: {OK, token, id}, {NONE, ms until the server frees something
-- by itself, or -1}, or {EMPTY} when the pool has no resource at all.
local request = ARGV[3]
if recorded(request) then
  -- The client gave this request up (abandon ran first): whoever sent it
  -- is gone, so it takes nothing.
  return { NONE, next_event() }
end
local prior = redis.call('HGET', REQ, request)
if prior then
  -- The client sent this request again (its reply was lost): the same
  -- lease, not a second one.
  local owner = redis.call('HGET', OWNER, prior)
  if owner then
    local _, id = split_owner(owner)
    -- Written again, so that a WAIT after this reply covers the grant.
    redis.call('HSET', REQ, request, prior)
    return { OK, prior, id }
  end
end
local best = redis.call('ZRANGE', AVAIL, 0, 0)[1]
if not best then
  if (tonumber(redis.call('HGET', RES, '#n')) or 0) == 0 then
    return { EMPTY }
  end
  return { NONE, next_event() }
end
local r = load(string.sub(best, 12))
set_holders(r, r.h + 1)
relist(r, best)
local token = next_token()
redis.call('ZADD', LEASES, now + tonumber(ARGV[2]), token)
redis.call('HSET', OWNER, token, request .. ':' .. r.id)
redis.call('HSET', REQ, request, token)
-- A slot that reclaim freed and this caller took wakes nobody.
if freed > 0 then
  freed = freed - 1
end
return { OK, token, r.id }
