-- Part of the pool's helpers (see scripts.go): the order of service of
-- a fair pool (classes.lua): strict priority, then start-time fair
-- queuing between the tenants of a priority, first come, first served
-- within a class. A class whose first waiter cannot be served (its cost
-- not covered, its tenant's buckets short) is passed over: it holds
-- back only itself.

-- account counts a grant of share units to class cid, whose tenant
-- has weight w: the level's virtual time moves to the class's (the
-- start of this grant), the class's on by share / w.
local function account(cid, share, w)
  local f, level = class_time(cid)
  f = math.max(f, level)
  redis.call('HSET', TEN, 'v' .. string.sub(cid, 1, 10), string.format('%.17g', f))
  set_class_time(cid, f + share / w)
end

-- share_of is what a grant of cost counts in the tenants' shares: its
-- amount of the limit named name (Options.ShareBy, hex), or 1.
local function share_of(cost, name)
  if name == '' then
    return 1
  end
  return of(cost, name)
end

-- class_head returns the first waiter of class cid whose entry holds
-- (request, lease TTL, process, cost, class field), or nil; the
-- entries before it that expired or went go.
local function class_head(cid)
  while true do
    local m = class_first(cid)
    if not m then
      return nil
    end
    local request = string.sub(m, #cid + 19)
    local exp, ttl, proc, cost, cls = waiting(redis.call('HGET', REQ, request))
    if exp and exp >= now then
      return request, ttl, proc, cost, cls
    end
    redis.call('ZREM', FQ, m)
    redis.call('ZREM', QUEUE, request)
    if exp then
      redis.call('HDEL', REQ, request)
    end
  end
end

-- serve_class serves the first waiter of class cid if it can: true when
-- it did, or the class had no waiter left; false when that waiter is
-- held back (by its tenant's buckets, or no listed resource covers its
-- cost); nil when no slot is free at all.
local function serve_class(cid, quiet)
  local request, ttl, proc, costv, cls = class_head(cid)
  if not request then
    list_class(cid, (class_time(cid)))
    return true
  end
  local cost = parse_cost(costv)
  local t = tenant_of(cid)
  if t.b and not fits(t, cost) then
    return false
  end
  local r, m = covering(cost)
  if not r then
    if not cost then
      return nil
    end
    if m and not quiet then
      tell(proc, request)
    end
    return false
  end
  local _, _, share = split_class(cls)
  local tpaid = tenant_charge(t, cost)
  account(cid, share, t.w)
  hand(r, request, ttl, proc, lease_to(r, m, cost), cls, cid .. '~' .. num(share) .. '~' .. (tpaid or ''))
  return true
end

-- serve_fair hands the leasable slots to the waiters in the fair order
-- as long as both last. The classes held back stay first in RDY (each
-- grant moves its class back), so they are the first skipped ones.
serve_fair = function(quiet)
  local skipped = 0
  while true do
    local m = redis.call('ZRANGE', RDY, num(skipped), num(skipped))[1]
    if not m then
      return
    end
    local got = serve_class(ready_cid(m), quiet)
    if got == nil then
      return
    end
    if not got then
      skipped = skipped + 1
    end
  end
end

-- go_fair makes a plain pool fair: each waiter joins the default class,
-- in the order it came; share_name is Options.ShareBy (hex).
local function go_fair(share_name)
  local all = redis.call('ZRANGE', QUEUE, '0', '-1', 'WITHSCORES')
  for i = 1, #all, 2 do
    local request, arrival = all[i], tonumber(all[i + 1])
    local exp, ttl, proc, cost = waiting(redis.call('HGET', REQ, request))
    if exp then
      local share = share_of(parse_cost(cost), share_name)
      redis.call('ZADD', FQ, '0', queued_member(CID0, arrival, request))
      redis.call('HSET', REQ, request, waiting_entry(exp, ttl, proc, cost, CID0 .. '/' .. num(arrival) .. '/' .. num(share)))
    else
      redis.call('ZREM', QUEUE, request)
    end
  end
  set_class_time(CID0, (class_time(CID0)))
end

-- FAIR_LOOK bounds the classes whose tenants' refills fair_event looks
-- at: those first in the order.
local FAIR_LOOK = 16

-- fair_event is at (the next event, or -1), or sooner the time until
-- the tenant's buckets of one of the first classes cover its first
-- waiter's cost, or (with budgets) a listed resource covers the cost of
-- the first class's: refills are nobody's event, so a waiter re-checks
-- then, and its re-check serves them.
local function fair_event(at, budgets)
  for i, m in ipairs(redis.call('ZRANGE', RDY, '0', num(FAIR_LOOK - 1))) do
    local cid = ready_cid(m)
    local head = class_first(cid)
    if head then
      local _, _, _, costv = waiting(redis.call('HGET', REQ, string.sub(head, #cid + 19)))
      local cost = parse_cost(costv)
      local t = tenant_of(cid)
      local w = nil
      if t.b and not fits(t, cost) then
        w = cover_wait(t, cost)
      elseif i == 1 and budgets and cost then
        local r, rw = covering(cost)
        w = r and 0 or rw
      end
      if w and (at < 0 or w < at) then
        at = w
      end
    end
  end
  return at
end

-- settle_fair corrects a lease's class part (lease_entry) for what it
-- spent, actual: its class's usage by the difference in its share
-- (when actual names share_name), its tenant's buckets as settle does
-- a resource's; and returns the new part.
local function settle_fair(fair, actual, share_name)
  local cid, share, tpaid = string.match(fair, '^(%d+%x*)~(%d+)~(.*)$')
  share = tonumber(share)
  local t = tenant_of(cid)
  if share_name ~= '' and actual and actual[share_name] and actual[share_name] ~= share then
    local f = class_time(cid)
    set_class_time(cid, f + (actual[share_name] - share) / t.w)
    share = actual[share_name]
  end
  if tpaid ~= '' and t.b and actual then
    refill(t)
    local before, now_paid = parse_cost(tpaid), {}
    for _, b in ipairs(t.b) do
      local est, act = before[b.n], actual[b.n]
      if est and act then
        settle_bucket(b, est, act)
        freed = freed or act < est
      end
      if est then
        now_paid[#now_paid + 1] = b.n .. '=' .. num(act or est)
      end
    end
    redis.call('HSET', TEN, 't' .. t.th, tenant_text(t))
    tpaid = table.concat(now_paid, ',')
  end
  return cid .. '~' .. num(share) .. '~' .. tpaid
end
