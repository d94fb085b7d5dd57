-- Part of the pool's helpers (see scripts.go): tenants and the classes
-- of waiters (WithTenant, WithPriority), what the fair order of
-- service (fair.lua) rests on.
--
-- A class is a tenant at a priority, named by its cid: 10 digits,
-- 2147483647 minus the priority (so that the highest sorts first), then
-- the tenant's name in hex. CID0 is the default class (tenant '',
-- priority 0). The pool is in one of two modes:
--   - plain: no waiter is in a class; QUEUE is served first come,
--     first served, as if there were no classes (grant.lua's serve).
--   - fair: every waiter in QUEUE is also in FQ, under its class (a
--     default waiter under CID0), and its entry in REQ says so ('@'
--     field, see waiting_entry); each class with waiters is in RDY.
-- A waiter that names a class turns a plain pool fair (go_fair); the
-- pool is plain again once the queue is empty. So the oldest waiter's
-- entry tells the mode, and a pool whose callers never name a class
-- pays nothing for them.
--
-- TEN (hash):
--   't' .. TENANT  'WEIGHT' or 'WEIGHT MS NAME,MAX,PER,UNITS,REM;...':
--                  a tenant that SyncTenants gave (none: weight 1, no
--                  limits), with its buckets' levels as of MS
--   'c' .. CID     the class's virtual time: its usage over its weight,
--                  never below its level's (start-time fair queuing)
--   'r' .. CID     the class's member of RDY, while it has waiters
--   'v' .. PRIO    the level's virtual time: the start of the last
--                  grant at that priority (PRIO the cid's 10 digits)
-- FQ (zset, all scores 0, in lexical order): CID .. ' ' .. 16-digit
-- arrival .. ' ' .. request, so that a class's oldest waiter is the
-- first member from 'CID '.
-- RDY (zset, all scores 0): PRIO .. 30-char virtual time .. 16-digit
-- arrival of its first waiter .. TENANT for each class with waiters,
-- so that the first member is the class to serve next: the highest
-- priority, then the least virtual time, then the longest wait.

local CID0 = '2147483647'

-- tenants caches the tenants this call read (load_tenant).
local tenants = {}

-- load_tenant reads the tenant th (hex name): {th, w, and for one with
-- limits, t and b as a resource's buckets (bucket.lua works on it)}.
local function load_tenant(th)
  local t = tenants[th]
  if t then
    return t
  end
  t = { th = th, w = 1 }
  local v = redis.call('HGET', TEN, 't' .. th)
  if v then
    local w, at, bs = string.match(v, '^(%d+) ?(%d*) ?(.*)$')
    t.w = tonumber(w)
    if bs ~= '' then
      t.t, t.b = tonumber(at), {}
      for n, m, p, u, rem in string.gmatch(bs, '(%x+),(%d+),(%d+),(%-?%d+),(%d+)') do
        t.b[#t.b + 1] = { n = n, m = tonumber(m), p = tonumber(p), u = tonumber(u), r = tonumber(rem), born = 0 }
      end
    end
  end
  tenants[th] = t
  return t
end

-- tenant_text is t as TEN keeps it.
local function tenant_text(t)
  local v = num(t.w)
  if t.b then
    local out = {}
    for i, b in ipairs(t.b) do
      out[i] = b.n .. ',' .. num(b.m) .. ',' .. num(b.p) .. ',' .. num(b.u) .. ',' .. num(b.r)
    end
    v = v .. ' ' .. num(t.t) .. ' ' .. table.concat(out, ';')
  end
  return v
end

-- tenant_of is the tenant of class cid.
local function tenant_of(cid)
  return load_tenant(string.sub(cid, 11))
end

-- tenant_exceeds reports whether cost is above a bucket's MAX of the
-- tenant of cid: no wait would end.
local function tenant_exceeds(cid, cost)
  local t = tenant_of(cid)
  for _, b in ipairs(t.b or {}) do
    if of(cost, b.n) > b.m then
      return true
    end
  end
  return false
end

-- tenant_charge takes cost from t's buckets, which cover it (fits), and
-- returns what it took ('NAME=AMOUNT,...'), or nil for a tenant without
-- limits.
local function tenant_charge(t, cost)
  if not t.b then
    return nil
  end
  refill(t)
  local paid = {}
  for i, b in ipairs(t.b) do
    local c = of(cost, b.n)
    b.u = b.u - c
    paid[i] = b.n .. '=' .. num(c)
  end
  redis.call('HSET', TEN, 't' .. t.th, tenant_text(t))
  return table.concat(paid, ',')
end

-- class_time is the virtual time of class cid and of its level.
local function class_time(cid)
  local v = redis.call('HMGET', TEN, 'c' .. cid, 'v' .. string.sub(cid, 1, 10))
  return tonumber(v[1]) or 0, tonumber(v[2]) or 0
end

-- ready_cid is the cid of a member of RDY.
local function ready_cid(m)
  return string.sub(m, 1, 10) .. string.sub(m, 57)
end

-- queued_member is the member of FQ of request, of class cid, which
-- arrived arrival-th.
local function queued_member(cid, arrival, request)
  return cid .. ' ' .. string.format('%016d', arrival) .. ' ' .. request
end

-- class_first is the first member of FQ of class cid, or nil.
local function class_first(cid)
  return redis.call('ZRANGEBYLEX', FQ, '[' .. cid .. ' ', '(' .. cid .. '!', 'LIMIT', '0', '1')[1]
end

-- list_class lists class cid, at virtual time f, in RDY if it has
-- waiters, by its first waiter's arrival; and unlists it if not.
local function list_class(cid, f)
  local old = redis.call('HGET', TEN, 'r' .. cid)
  if old then
    redis.call('ZREM', RDY, old)
  end
  local first = class_first(cid)
  if not first then
    if old then
      redis.call('HDEL', TEN, 'r' .. cid)
    end
    return
  end
  local m = string.sub(cid, 1, 10) .. string.format('%030.6f', f) .. string.sub(first, #cid + 2, #cid + 17) .. string.sub(cid, 11)
  redis.call('ZADD', RDY, '0', m)
  redis.call('HSET', TEN, 'r' .. cid, m)
end

-- set_class_time makes f the virtual time of class cid, kept at least
-- its level's (a class back from idle, or held back by its own
-- tenant's limits, banks no credit), and lists it (list_class).
local function set_class_time(cid, f)
  local _, level = class_time(cid)
  f = math.max(f, level)
  redis.call('HSET', TEN, 'c' .. cid, string.format('%.17g', f))
  list_class(cid, f)
end

-- enqueue puts request, of class cid (nil: plain) and share share, at
-- the back of the queue and returns its entry's class field (nil when
-- plain).
local function enqueue(request, cid, share)
  local arrival = redis.call('HINCRBY', RES, '#q', '1')
  redis.call('ZADD', QUEUE, num(arrival), request)
  if not cid then
    return nil
  end
  redis.call('ZADD', FQ, '0', queued_member(cid, arrival, request))
  set_class_time(cid, (class_time(cid)))
  return cid .. '/' .. num(arrival) .. '/' .. share
end

-- split_class returns the cid, arrival and share of a class field.
local function split_class(cls)
  local cid, arrival, share = string.match(cls, '^(%d+%x*)/(%d+)/(%d+)$')
  return cid, tonumber(arrival), tonumber(share)
end

-- unqueue takes request, whose entry's class field is cls (nil:
-- plain), out of the queue; the caller deletes its entry or replaces
-- it.
local function unqueue(request, cls)
  redis.call('ZREM', QUEUE, request)
  if cls then
    local cid, arrival = split_class(cls)
    redis.call('ZREM', FQ, queued_member(cid, arrival, request))
    list_class(cid, (class_time(cid)))
  end
end
