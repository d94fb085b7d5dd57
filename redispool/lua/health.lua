-- Part of the pool's helpers (see scripts.go): ejection after failures,
-- and the end of a lease.

-- EJECT is the pool's Options.Ejection for the call that may eject
-- (fail): {n = failures in a row, base, max = ms, share}, or nil.
local EJECT

-- may_eject reports whether one more resource may be ejected: never the
-- last that is neither ejected nor excluded, nor more than the share,
-- but always one, as the core.
local function may_eject()
  local c = redis.call('HMGET', RES, '#n', '#x', '#j')
  local size, x, j = tonumber(c[1]) or 0, tonumber(c[2]) or 0, tonumber(c[3]) or 0
  local limit = size - x - 1
  if EJECT.share > 0 then
    limit = math.min(limit, math.max(1, math.floor(EJECT.share * size)))
  end
  return j < limit
end

-- health counts how a hold on r ended: 'ok' (Release) resets its
-- failures, 'fail' counts one and, with ejection on, ejects r once they
-- reach the threshold, for its n-th ejection n x base (at most max);
-- anything else counts neither. The caller stores and relists r.
local function health(r, how)
  if how == 'ok' then
    if (r.f or 0) > 0 then
      r.f = 0
    end
    return
  end
  if how ~= 'fail' then
    return
  end
  r.f, r.j = (r.f or 0) + 1, r.j or 0
  if not EJECT or r.x or r.f < EJECT.n then
    return
  end
  local already = r.e > 0
  if not already and not may_eject() then
    return
  end
  r.j, r.f = r.j + 1, 0
  local d = EJECT.base * r.j
  if EJECT.max > 0 then
    d = math.min(d, EJECT.max)
  end
  d = math.min(d, 2 ^ 52) -- an ejection that long lasts until Include
  if not already then
    redis.call('HINCRBY', RES, '#j', '1')
  end
  r.e = math.max(r.e, now + d)
  suspend(r, r.e)
end

-- end_lease frees the slot of lease, a member of LEASES that the caller
-- has just taken out of it: the slot goes to the oldest waiter if there
-- is one (and its buckets cover the waiter's cost); a draining resource
-- leaves with its last lease. cool > 0 suspends the resource until now
-- + cool in the same step (Cooldown). how is how the hold went (see
-- health).
local function end_lease(lease, cool, how)
  local _, request, id = split_lease(lease)
  redis.call('HDEL', REQ, request)
  local r = load(id)
  if not r then
    return
  end
  local old = listing(r)
  r.h = r.h - 1
  if r.d then
    if r.h == 0 then
      drop(r)
    else
      store(r)
    end
    return
  end
  local failures = r.f
  health(r, how)
  if cool > 0 and not r.x then
    suspend(r, now + cool)
  end
  if eligible(r) then
    local waiter, ttl, proc, cost, cls = oldest()
    if cls then
      waiter = nil -- a fair pool: serve chooses (fair.lua)
      freed = true
    end
    if waiter and not r.b then
      -- Straight to the waiter: r's holders and listing stay as they
      -- were.
      r.h = r.h + 1
      if r.f ~= failures then
        store(r)
      end
      hand(r, waiter, ttl, proc)
      return
    end
    if waiter and fits(r, parse_cost(cost)) then
      hand(r, waiter, ttl, proc, lease_to(r, old, parse_cost(cost)))
      return
    end
    store(r)
    relist(r, old)
    if not waiter and not cls then
      freed = false -- nothing to serve
    end
    return
  end
  store(r)
  relist(r, old)
end
