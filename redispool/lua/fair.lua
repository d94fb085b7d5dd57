-- Part of the pool's helpers (see scripts.go): tenants, the classes of
-- waiters (WithTenant, WithPriority) and the fair order of service.
--
-- A class is a tenant at a priority, named by its cid: 10 digits,
-- 2147483647 minus the priority (so that the highest sorts first), then
-- the tenant's name in hex. CID0 is the default class (tenant '',
-- priority 0). The pool is in one of two modes:
--   - plain: no waiter is in a class; QUEUE is served first come,
--     first served, as if there were no classes (grant.lua's serve).
--   - fair: every waiter in QUEUE also has a 'w' record in FAIR, under
--     its class (a default waiter under CID0), and its entry in REQ
--     says so ('@' field, see waiting_entry); each class with waiters
--     has an 'r' record.
-- A waiter that names a class turns a plain pool fair (go_fair); the
-- pool is plain again once the queue is empty. So the oldest waiter's
-- entry tells the mode, and a pool whose callers never name a class
-- pays nothing for them.
--
-- FAIR is one zset, all scores 0, read in lexical order (one key more
-- for every call, not three: each key is a conversion in the client),
-- whose members are records of these kinds, by their first letter:
--   't' .. TENANT .. ' ' .. 'WEIGHT', or for one with limits
--            'WEIGHT MS NAME,MAX,PER,UNITS,REM;...': a tenant that SyncTenants gave (none: weight 1, no
--            limits), with its buckets' levels as of MS
--   'n' .. CID .. ' ' .. GRANTS .. ' ' .. USAGE: the class's figures
--            (Stats.Tenants), since its first grant in a class
--   'c' .. CID .. ' ' .. the class's virtual time: its usage over its
--            weight, never below its level's (start-time fair queuing)
--   'm' .. CID .. ' ' .. its 'r' record, while it has waiters
--   'v' .. PRIO .. ' ' .. the level's virtual time: the start of the
--            last grant at that priority (PRIO the cid's 10 digits)
--   'w' .. CID .. ' ' .. 16-digit arrival .. ' ' .. request: a waiter,
--            so that a class's oldest is its first 'w' record
--   'r' .. PRIO .. 30-char virtual time .. 16-digit arrival of its
--            first waiter .. TENANT: a class with waiters, so that the
--            first 'r' record is the class to serve next: the highest
--            priority, then the least virtual time, then the longest
--            wait
-- get and put read and write the records that have a value.
--
-- The order of service of a fair pool: strict priority, then start-time fair
-- queuing between the tenants of a priority, first come, first served
-- within a class. A class whose first waiter cannot be served (its cost
-- not covered, its tenant's buckets short) is passed over: it holds
-- back only itself.
--
-- Built on first use (fair): a script runs every definition of the
-- helpers at each call, and a pool whose callers name no class uses
-- none of these. What build_fair uses of the helpers before it comes in
-- one list (fair_deps), so that creating it searches for one outer
-- local, not for each (see call_state): a list, as a table of names
-- costs a hash each.
local fair_deps = {
  call_state, num, parse_cost, of, fits, refill, cover_wait, settle_bucket,
  waiting, waiting_entry, covering, hand, lease_to, tell, unknown,
}

local function build_fair()
  local state, num, parse_cost, of, fits, refill, cover_wait, settle_bucket,
    waiting, waiting_entry, covering, hand, lease_to, tell, unknown = unpack(fair_deps)
  local now, RES, REQ, QUEUE, FAIR = state()
  -- self is what build_fair returns; self.own is a request that the
  -- call itself answers, which serve grants without a message (see the
  -- fair path of acquire.lua).
  local self = {}
  local CID0 = '2147483647'

  -- tenants caches the tenants this call read (load_tenant).
  local tenants = {}

  -- get is the value of record name (kind and key) in FAIR, or nil.
  local function get(name)
    local m = redis.call('ZRANGEBYLEX', FAIR, '[' .. name .. ' ', '(' .. name .. '!', 'LIMIT', '0', '1')[1]
    return m and string.sub(m, #name + 2)
  end

  -- put makes v the value of record name (nil: deletes it).
  local function put(name, v)
    local old = get(name)
    if old == v then
      return
    end
    if old then
      redis.call('ZREM', FAIR, name .. ' ' .. old)
    end
    if v then
      redis.call('ZADD', FAIR, '0', name .. ' ' .. v)
    end
  end

  -- load_tenant reads the tenant th (hex name): {th, w, and for one with
  -- limits, t and b as a resource's buckets (bucket.lua works on it)}.
  local function load_tenant(th)
    local t = tenants[th]
    if t then
      return t
    end
    t = { th = th, w = 1 }
    local v = get('t' .. th)
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

  -- tenant_text is t as its record keeps it.
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

  -- unknown_to is the first name of costv (sorted) that neither a
  -- resource of the pool nor the tenant of cid has a limit for, or nil.
  local function unknown_to(cid, costv)
    local own = {}
    for _, b in ipairs(tenant_of(cid).b or {}) do
      own[b.n] = true
    end
    for n in string.gmatch(costv, '(%x+)=%d+') do
      if not own[n] and unknown(n .. '=0') then
        return n
      end
    end
    return nil
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
    put('t' .. t.th, tenant_text(t))
    return table.concat(paid, ',')
  end

  -- class_time is the virtual time of class cid and of its level.
  local function class_time(cid)
    return tonumber(get('c' .. cid)) or 0, tonumber(get('v' .. string.sub(cid, 1, 10))) or 0
  end

  -- ready_cid is the cid of an 'r' record.
  local function ready_cid(m)
    return string.sub(m, 2, 11) .. string.sub(m, 58)
  end

  -- queued_member is the 'w' record of request, of class cid, which
  -- arrived arrival-th.
  local function queued_member(cid, arrival, request)
    return 'w' .. cid .. ' ' .. string.format('%016d', arrival) .. ' ' .. request
  end

  -- class_first is the first 'w' record of class cid, or nil.
  local function class_first(cid)
    return redis.call('ZRANGEBYLEX', FAIR, '[w' .. cid .. ' ', '(w' .. cid .. '!', 'LIMIT', '0', '1')[1]
  end

  -- request_of is the request of a 'w' record of class cid.
  local function request_of(cid, m)
    return string.sub(m, #cid + 20)
  end

  -- ready returns count 'r' records from the offset-th.
  local function ready(offset, count)
    return redis.call('ZRANGEBYLEX', FAIR, '[r', '(s', 'LIMIT', num(offset), num(count))
  end

  -- list_class gives class cid, at virtual time f, its 'r' record if it
  -- has waiters, by its first waiter's arrival; and takes it if not.
  local function list_class(cid, f)
    local old = get('m' .. cid)
    if old then
      redis.call('ZREM', FAIR, old)
    end
    local first = class_first(cid)
    local m = nil
    if first then
      m = 'r' .. string.sub(cid, 1, 10) .. string.format('%030.6f', f) .. string.sub(first, #cid + 3, #cid + 18) .. string.sub(cid, 11)
      redis.call('ZADD', FAIR, '0', m)
    end
    put('m' .. cid, m)
  end

  -- set_class_time makes f the virtual time of class cid, kept at least
  -- its level's (a class back from idle, or held back by its own
  -- tenant's limits, banks no credit), and lists it (list_class).
  local function set_class_time(cid, f)
    local _, level = class_time(cid)
    f = math.max(f, level)
    put('c' .. cid, string.format('%.17g', f))
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
    redis.call('ZADD', FAIR, '0', queued_member(cid, arrival, request))
    set_class_time(cid, (class_time(cid)))
    return cid .. '/' .. num(arrival) .. '/' .. share
  end

  -- split_class returns the cid, arrival and share of a class field.
  local function split_class(cls)
    local cid, arrival, share = string.match(cls, '^(%d+%x*)/(%d+)/(%d+)$')
    return cid, tonumber(arrival), tonumber(share)
  end

  -- unqueue_class takes request, whose entry's class field is cls, out
  -- of its class (unqueue in grant.lua).
  local function unqueue_class(request, cls)
    local cid, arrival = split_class(cls)
    redis.call('ZREM', FAIR, queued_member(cid, arrival, request))
    list_class(cid, (class_time(cid)))
  end

  -- tally adds grants and usage to the figures of class cid (Stats).
  local function tally(cid, grants, usage)
    local g, u = string.match(get('n' .. cid) or '0 0', '^(%d+) (%-?%d+)$')
    put('n' .. cid, num(tonumber(g) + grants) .. ' ' .. num(tonumber(u) + usage))
  end

  -- class_stats is, for each class with figures or waiters, in the order
  -- of its cid: cid, waiters, grants, usage (Stats.Tenants).
  local function class_stats()
    local by, order = {}, {}
    local function of_class(cid)
      if not by[cid] then
        by[cid] = { cid, 0, 0, 0 }
        order[#order + 1] = cid
      end
      return by[cid]
    end
    for _, m in ipairs(redis.call('ZRANGEBYLEX', FAIR, '[n', '(o')) do
      local cid, g, u = string.match(m, '^n(%S+) (%d+) (%-?%d+)$')
      local c = of_class(cid)
      c[3], c[4] = tonumber(g), tonumber(u)
    end
    for _, m in ipairs(redis.call('ZRANGEBYLEX', FAIR, '[w', '(x')) do
      local c = of_class(string.match(m, '^w(%S+) '))
      c[2] = c[2] + 1
    end
    table.sort(order)
    local out = {}
    for _, cid in ipairs(order) do
      for _, v in ipairs(by[cid]) do
        out[#out + 1] = v
      end
    end
    return out
  end

  -- account counts a grant of share units to class cid, whose tenant
  -- has weight w: the level's virtual time moves to the class's (the
  -- start of this grant), the class's on by share / w.
  local function account(cid, share, w)
    local f, level = class_time(cid)
    f = math.max(f, level)
    put('v' .. string.sub(cid, 1, 10), string.format('%.17g', f))
    set_class_time(cid, f + share / w)
    tally(cid, 1, share)
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
      local request = request_of(cid, m)
      local exp, ttl, proc, cost, cls = waiting(redis.call('HGET', REQ, request))
      if exp and exp >= now then
        return request, ttl, proc, cost, cls
      end
      redis.call('ZREM', FAIR, m)
      redis.call('ZREM', QUEUE, request)
      if exp then
        redis.call('HDEL', REQ, request)
      end
    end
  end

  -- serve_class serves the first waiter of the class whose 'r' record
  -- is m if it can: true when it did, or the class had no waiter left;
  -- false when that waiter is held back (by its tenant's buckets, or no
  -- listed resource covers its cost); nil when no slot is free at all.
  local function serve_class(m, quiet)
    local cid = ready_cid(m)
    local request, ttl, proc, costv, cls = class_head(cid)
    if not request then
      -- m goes, whatever its 'm' record says: serve_fair must not meet
      -- it again.
      redis.call('ZREM', FAIR, m)
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
    unqueue_class(request, cls)
    hand(r, request, ttl, proc, lease_to(r, m, cost), cid .. '~' .. num(share) .. '~' .. (tpaid or ''), request == self.own)
    return true
  end

  -- serve_fair hands the leasable slots to the waiters in the fair order
  -- as long as both last. The classes held back stay first (each
  -- grant moves its class back), so they are the first skipped ones.
  local function serve_fair(quiet)
    local skipped = 0
    while true do
      local m = ready(skipped, 1)[1]
      if not m then
        return
      end
      local got = serve_class(m, quiet)
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
        redis.call('ZADD', FAIR, '0', queued_member(CID0, arrival, request))
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
    for i, m in ipairs(ready(0, FAIR_LOOK)) do
      local cid = ready_cid(m)
      local head = class_first(cid)
      if head then
        local _, _, _, costv = waiting(redis.call('HGET', REQ, request_of(cid, head)))
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
  local function settle_fair(part, actual, share_name)
    local refunded = false
    local cid, share, tpaid = string.match(part, '^(%d+%x*)~(%d+)~(.*)$')
    share = tonumber(share)
    local t = tenant_of(cid)
    if share_name ~= '' and actual and actual[share_name] and actual[share_name] ~= share then
      local f = class_time(cid)
      set_class_time(cid, f + (actual[share_name] - share) / t.w)
      tally(cid, 0, actual[share_name] - share)
      share = actual[share_name]
    end
    if tpaid ~= '' and t.b and actual then
      refill(t)
      local before, now_paid = parse_cost(tpaid), {}
      for _, b in ipairs(t.b) do
        local est, act = before[b.n], actual[b.n]
        if est and act then
          settle_bucket(b, est, act)
          refunded = refunded or act < est
        end
        if est then
          now_paid[#now_paid + 1] = b.n .. '=' .. num(act or est)
        end
      end
      put('t' .. t.th, tenant_text(t))
      tpaid = table.concat(now_paid, ',')
    end
    return cid .. '~' .. num(share) .. '~' .. tpaid, refunded
  end

  for k, v in pairs({
    CID0 = CID0,
    tenants = tenants,
    load_tenant = load_tenant,
    tenant_text = tenant_text,
    get = get,
    put = put,
    tenant_exceeds = tenant_exceeds,
    unknown_to = unknown_to,
    split_class = split_class,
    enqueue = enqueue,
    unqueue_class = unqueue_class,
    share_of = share_of,
    serve = serve_fair,
    go_fair = go_fair,
    fair_event = fair_event,
    settle_fair = settle_fair,
    class_stats = class_stats,
  }) do
    self[k] = v
  end
  return self
end

local fair_helpers = nil

-- unqueue takes request, whose entry's class field is cls (nil:
-- plain), out of the queue; the caller deletes its entry or replaces
-- it.
local function unqueue(request, cls)
  redis.call('ZREM', QUEUE, request)
  if cls then
    fair().unqueue_class(request, cls)
  end
end

-- fair returns the helpers of a fair pool (build_fair), built once per
-- call.
fair = function()
  if not fair_helpers then
    fair_helpers = build_fair()
  end
  return fair_helpers
end
