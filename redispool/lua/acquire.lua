-- acquire: lease the best resource whose buckets cover the cost ARGV[5]
-- (see parse_cost) for ARGV[2] ms, for request REQUEST (nothing is
-- recorded in DONE for it: its entry in REQ is the record), the cost
-- taken in the same step. When the pool has waiters, or no free slot
-- that covers the cost, and ARGV[3] > 0, the request waits in QUEUE,
-- its entry holding for ARGV[3] ms, and its grant will be told to
-- process ARGV[4]; the same request sent again (a re-check, or
-- go-redis resending it) keeps its place, or gets the lease that it was
-- granted meanwhile. A re-check also serves the oldest waiter, whose
-- cost a refill may cover by now. A new request whose cost names a
-- limit that no resource of the pool has is refused, unless ARGV[6] is
-- '1' (AllowUnknownLimits). ARGV[7] is the request's class, ARGV[8]
-- Options.ShareBy (see the new request in a fair pool, below).
-- Reply: {OK, token, id, ms left of the lease}, {QUEUED, ms until the
-- server frees something by itself or a refill covers the oldest
-- waiter, or -1}, {NONE, ms until the server frees something, or -1}
-- for a request that does not wait, {EMPTY} when the pool has no
-- resource at all, {EXCEEDS} when the cost is above a bucket's MAX
-- on every resource, or {UNKNOWN_LIMIT, the first name it gives that no
-- resource has (hex)}.
local request, ttl, entry, proc, costv = REQUEST, tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5]
local any_name = ARGV[6] == '1'
-- cid: the request's class ('' for none: see fair.lua); share_name:
-- Options.ShareBy, in hex ('' for none).
local cid, share_name = ARGV[7], ARGV[8]
local cost = parse_cost(costv)
-- counts are the pool's resources and those with buckets, read once.
local counts = nil
local function pool_counts()
  if not counts then
    local c = redis.call('HMGET', RES, '#n', '#b')
    counts = { tonumber(c[1]) or 0, tonumber(c[2]) or 0 }
  end
  return counts
end
local function empty()
  return pool_counts()[1] == 0
end
-- budgets: a refill may serve a waiter (without buckets, only the
-- events that free slots do).
local function budgets()
  return pool_counts()[2] > 0
end
if freed then
  serve() -- what reclaim freed goes to those who waited
end
-- never is whether no resource will ever cover cost: none listed will
-- (see covering), and every one's limits are below it (exceeds, which
-- reads them all, only then).
local function never()
  if not cost or not budgets() then
    return false
  end
  local r, soon = covering(cost)
  return not r and not soon and exceeds(cost)
end
local prior = redis.call('HGET', REQ, request)
local pexp, _, _, _, pcls = waiting(prior)
if pexp then
  if empty() then
    -- Removed while this request waited (its last resources drain).
    unqueue(request, pcls)
    redis.call('HDEL', REQ, request)
    return { EMPTY }
  end
  if budgets() or pcls then
    serve(true)
    prior = redis.call('HGET', REQ, request)
  end
  if waiting(prior) then
    if never() or (pcls and fair().tenant_exceeds(fair().split_class(pcls), cost)) then
      -- Its resources' or its tenant's limits lowered below its cost
      -- (Sync, SyncTenants).
      unqueue(request, pcls)
      redis.call('HDEL', REQ, request)
      freed = true -- the waiters behind it may wait for it alone (serve)
      return { EXCEEDS }
    end
    redis.call('HSET', REQ, request, waiting_entry(now + entry, ttl, proc, costv, pcls))
    return { QUEUED, waiter_event(budgets(), pcls) }
  end
end
if prior then
  -- Granted: the same lease, not a second one.
  local token, id = split_entry(prior)
  local deadline = redis.call('ZSCORE', LEASES, lease_member(token, request, id))
  if deadline then
    -- Written again, so that a WAIT after this reply covers the grant.
    redis.call('HSET', REQ, request, prior)
    return { OK, token, id, deadline - now }
  end
end
if recorded() then
  -- The client gave this request up (abandon ran first): whoever sent it
  -- is gone, so it takes nothing.
  return { NONE, next_event() }
end
if cost and not any_name and not empty() then
  local name = unknown(costv)
  if name and cid ~= '' then
    name = fair().unknown_to(cid, costv) -- its tenant's limits count too
  end
  if name then
    return { UNKNOWN_LIMIT, name }
  end
end
local head, _, _, _, head_cls = oldest()
-- A new request in a fair pool, or for a class, queues in its class;
-- fair.lua's order serves what it can, and a request not served then
-- waits, or, not to wait, leaves: so it never takes a slot that a
-- waiter it would pass could have. (Inline: a function here would be
-- created at each call, a search for each outer local it uses.)
if cid ~= '' or head_cls then
  if empty() then
    return { EMPTY }
  end
  local f = fair()
  local c = cid ~= '' and cid or f.CID0
  if never() or f.tenant_exceeds(c, cost) then
    return { EXCEEDS }
  end
  if head then
    local _, _, _, _, cls = waiting(redis.call('HGET', REQ, head))
    if not cls then
      f.go_fair(share_name)
    end
  end
  local cls = f.enqueue(request, c, num(f.share_of(cost, share_name)))
  redis.call('HSET', REQ, request, waiting_entry(now + math.max(entry, 0), ttl, proc, costv, cls))
  f.own = request
  serve(true)
  f.own = nil
  local v = redis.call('HGET', REQ, request)
  if not waiting(v) then
    local token, id = split_entry(v)
    return { OK, token, id, ttl }
  end
  if entry <= 0 then
    unqueue(request, cls)
    redis.call('HDEL', REQ, request)
    return { NONE, next_event() }
  end
  if budgets() and (redis.call('ZCARD', AVAIL) > 0 or (tonumber(redis.call('HGET', RES, '#l')) or 0) > 0) then
    redis.call('HINCRBY', RES, '#w', '1') -- the limits' doing (Stats.LimitWaits)
  end
  return { QUEUED, waiter_event(budgets(), true) }
end
local r, old = nil, nil
if not head then
  r, old = covering(cost)
end
if r then
  local paid = lease_to(r, old, cost)
  return { OK, grant(r, request, ttl, paid), r.id, ttl }
end
if empty() then
  return { EMPTY }
end
if never() then
  return { EXCEEDS }
end
if entry <= 0 then
  return { NONE, next_event() }
end
if budgets() and (redis.call('ZCARD', AVAIL) > 0 or (tonumber(redis.call('HGET', RES, '#l')) or 0) > 0) then
  redis.call('HINCRBY', RES, '#w', '1') -- the limits' doing (Stats.LimitWaits)
end
redis.call('ZADD', QUEUE, num(redis.call('HINCRBY', RES, '#q', '1')), request)
redis.call('HSET', REQ, request, waiting_entry(now + entry, ttl, proc, costv))
return { QUEUED, waiter_event(budgets()) }
