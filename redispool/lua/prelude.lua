-- The pool's library: these functions, epilogue.lua's call, and each
-- operation's body as a function (see scripts.go). On Redis 7 and later
-- it is loaded once, as a FUNCTION library, and each operation is an
-- FCALL; on older servers each operation is a script of its own (this
-- library with that one body), called by EVALSHA. Either way every
-- state change is one atomic step on the server, and nothing here runs
-- per call but begin and what the operation calls.
--
-- KEYS (all share the {name} hash tag, so one Redis Cluster slot):
--   1 res     hash: 'r' .. ID -> the resource, one field packed as
--             "capacity holders flag suspension priority", where flag
--             is '-', 'x' (excluded) or 'd' (removed while leased) and
--             suspension the end of its suspension (ms, 0 for none);
--             its buckets, rest for them and health may follow (see
--             parse_ext), and other space-separated fields are kept as
--             they are. One field per resource keeps every lookup O(1)
--             whatever the pool's size. Pool counters: '#n' resources,
--             '#x' excluded, '#d' draining, '#e' expired leases, '#q'
--             waiters queued so far (their order), '#b' resources with
--             buckets (live or draining), '#l' resting for their
--             buckets, '#j' ejected, '#w' waits the limits caused
--   2 avail   zset: resources that can be leased now, score = priority,
--             member = 14-digit time (ms) at which its buckets are all
--             full again (0: full, or none) .. 10-digit holders .. ':'
--             .. ID, so that among equal priorities the most budget
--             left sorts first (the core's headroom), then fewer
--             holders
--   3 leases  zset: token -> deadline (ms, server clock)
--   4 owner   hash: token -> request .. ':' .. ID (request: 32 hex
--             digits), or, for a lease on a resource with buckets,
--             request .. '+' .. what it paid .. ':' .. ID (see charge),
--             which Settle replaces
--   5 susp    zset: ID -> end of its rest (ms, server clock): the later
--             of its suspension (an ejection is one) and its rest for
--             its buckets
--   6 req     hash: request -> token, the lease an acquire request got,
--             so that a retried request gets the same lease and an
--             abandoned one (its reply lost) can be given back; or, for
--             a request waiting in QUEUE, 'q EXPIRY TTL PROCESS[ COST]':
--             until when its entry holds (the waiter re-checks before
--             then), its lease TTL (ms), its process's id and its cost
--             (see parse_cost; none for the default)
--   7 done0   hash: '#e' an epoch (server ms / window), and for each
--   8 done1   write request of that epoch its status; for an acquire
--             request, that it was abandoned. A write's status is
--             recorded in the bucket of the current epoch, so that the
--             same request sent again (go-redis resends a command whose
--             connection broke before its reply) gets the first answer
--             instead of applying twice. A bucket is emptied when its
--             epoch comes round again, and expires two windows after:
--             a record lives one to two windows, and the two keys hold
--             no more than that.
--   9 token   string: the last fencing token granted. It outlives the
--             pool's other keys (tidy leaves it), so that tokens never go
--             back while the data survives, whatever the clocks do.
--  10 queue   zset: waiting acquire request -> its arrival number. A
--             freed slot goes to the oldest waiter whose entry holds,
--             granted in the script that frees it; the waiter's process
--             is told on the channel ARGV[1] .. ':' .. PROCESS.
-- ARGV[1] is always that channel's prefix; the last three are the
-- call's request ('' for none), the window (ms) and '1' when the call's
-- status is to be recorded.
--
-- epilogue.lua's call runs an operation and replies {status, wake error
-- or 0, the rest of the operation's reply}.
--
-- Time is the server's (TIME), read once per call by begin: every
-- operation needs it, to end the leases and suspensions that are over and to
-- date its record. With effect replication (the only mode since Redis
-- 7, the default since 5) a script that reads TIME replicates its
-- writes, not itself, so replicas and the AOF stay exact.
local KEYS, ARGV -- the call's, set by begin
local RES, AVAIL, LEASES, OWNER, SUSP, REQ, DONE, TOKEN, QUEUE
local WAKE, REQUEST, WINDOW, RECORD
local now_us, now, epoch

-- Status codes returned as the first element of every reply; the client
-- maps the negative ones to sentinel errors.
local OK, NONE, NOT_FOUND, DUPLICATE, DRAINING, NOT_ACTIVE, NOT_EXCLUDED, NOT_INACTIVE, EMPTY, EXCEEDS, UNKNOWN_LIMIT, QUEUED =
  1, 0, -1, -2, -3, -4, -5, -6, -7, -8, -9, 2

local freed    -- a slot may have become leasable: serve waiters
local dropped  -- a resource left or began to drain: the pool may be empty now
local wake_err -- the error of a refused PUBLISH (or 0), for the client to count
-- epochs holds the '#e' of the two DONE buckets once recorded has read
-- them (false: not read), so that record need not read them again.
local epochs

-- recorded is the status recorded for request in this epoch or the
-- last, or nil.
local function recorded(request)
  epochs = {}
  local found = nil
  for i, key in ipairs(DONE) do
    local v = redis.call('HMGET', key, '#e', request)
    epochs[i] = tonumber(v[1]) or -1
    if not found and v[2] and epochs[i] >= epoch - 1 then
      found = v[2]
    end
  end
  return found
end

-- record keeps status for request in the bucket of this epoch, emptied
-- first if it holds an older one. A bucket is written only during its
-- epoch, so expiring it two windows after it was emptied keeps every
-- record a window at least, and lets an idle pool's records go.
local function record(request, status)
  local i = epoch % 2 + 1
  local key = DONE[i]
  local e = epochs and epochs[i] or tonumber(redis.call('HGET', key, '#e'))
  if e == epoch then
    redis.call('HSET', key, request, status)
  else
    redis.call('DEL', key)
    redis.call('HSET', key, '#e', epoch, request, status)
    redis.call('PEXPIRE', key, 2 * WINDOW)
  end
end

-- The fields that may follow a resource's priority, each a letter and
-- its value (none for a resource without limits or a health record, so
-- that such a resource costs nothing more to load and store):
--   t MS                   when its buckets were last brought up to date
--   b NAME,MAX,PER,UNITS[+REM][,BORN]
--                          a bucket (Resource.Limits): NAME in hex, MAX
--                          units, PER ms; it holds UNITS whole units
--                          (negative: in debt) and REM (0 when absent,
--                          below PER) of 1/PER more, and gains MAX units
--                          per PER, up to MAX units. BORN: the last token
--                          granted when Sync added it to a resource that
--                          had leases (none: 0), so that Settle leaves it
--                          to leases granted since
--   q MS                   resting until then for its buckets, 0: not
--   f FAILS,EJECTIONS      failures in a row and ejections so far
--   e MS                   ejected until then (the suspension holds it)
--   a MS                   when its buckets are all full again, as its
--                          listing in AVAIL has it (see full_at)
-- Fields of other letters are kept as they are.

-- MIN_UNITS is the deepest debt a bucket records, in units.
local MIN_UNITS = -2 ^ 51

-- LONGEST_WAIT (ms) bounds a rest for the buckets: one that long lasts,
-- in effect, until Sync or Include.
local LONGEST_WAIT = 2 ^ 52

-- num formats an integer kept in a double, exactly.
local function num(x)
  return string.format('%.0f', x)
end

-- parse_ext reads the fields after r's priority into r.
local function parse_ext(r, rest)
  for tag, v in string.gmatch(rest, ' (%a)(%S*)') do
    if tag == 'b' then
      local n, m, p, u, rem, born = string.match(v, '^(%x+),(%d+),(%d+),(%-?%d+)%+?(%d*),?(%d*)$')
      r.b = r.b or {}
      r.b[#r.b + 1] = { n = n, m = tonumber(m), p = tonumber(p), u = tonumber(u), r = tonumber(rem) or 0, born = tonumber(born) or 0 }
    elseif tag == 't' then
      r.t = tonumber(v)
    elseif tag == 'q' then
      r.q = tonumber(v)
    elseif tag == 'f' then
      local f, j = string.match(v, '^(%d+),(%d+)$')
      r.f, r.j = tonumber(f), tonumber(j)
    elseif tag == 'e' then
      r.e = tonumber(v)
    elseif tag == 'a' then
      r.a = tonumber(v)
    else
      r.keep = (r.keep or '') .. ' ' .. tag .. v
    end
  end
end

-- load reads resource id, or nil.
local function load(id)
  local v = redis.call('HGET', RES, 'r' .. id)
  if not v then
    return nil
  end
  local c, h, f, s, p, rest = string.match(v, '^(%d+) (%d+) (%S) (%d+) (%S+)(.*)$')
  local r = { id = id, c = tonumber(c), h = tonumber(h), x = f == 'x', d = f == 'd', s = tonumber(s), p = p, q = 0, e = 0, a = 0 }
  if rest ~= '' then
    parse_ext(r, rest)
  end
  return r
end

-- ext is the text of r's fields after its priority.
local function ext(r)
  local out = ''
  if r.b then
    out = ' t' .. num(r.t or now)
    for _, b in ipairs(r.b) do
      out = out .. ' b' .. b.n .. ',' .. num(b.m) .. ',' .. num(b.p) .. ',' .. num(b.u)
      if b.r > 0 then
        out = out .. '+' .. num(b.r)
      end
      if b.born > 0 then
        out = out .. ',' .. num(b.born)
      end
    end
  end
  if r.q > 0 then
    out = out .. ' q' .. num(r.q)
  end
  if (r.f or 0) > 0 or (r.j or 0) > 0 then
    out = out .. ' f' .. num(r.f or 0) .. ',' .. num(r.j or 0)
  end
  if r.e > 0 then
    out = out .. ' e' .. num(r.e)
  end
  if r.a > 0 then
    out = out .. ' a' .. num(r.a)
  end
  return out .. (r.keep or '')
end

-- store writes r back.
local function store(r)
  local f = (r.x and 'x') or (r.d and 'd') or '-'
  redis.call('HSET', RES, 'r' .. r.id, string.format('%d %d %s %d %s', r.c, r.h, f, r.s, r.p) .. ext(r))
end

local function eligible(r)
  return not r.x and r.s == 0 and r.q == 0 and not r.d and r.h < r.c
end

-- listing is r's member in AVAIL, or nil when r is not leasable. The ID
-- is concatenated, not formatted: Lua 5.1's '%s' stops at a NUL byte in
-- strings under 100 bytes, which would list a resource under another ID.
local function listing(r)
  if eligible(r) then
    return string.format('%014d%010d', r.a, r.h) .. ':' .. r.id
  end
  return nil
end

-- listed_id is the ID of a member of AVAIL.
local function listed_id(m)
  return string.sub(m, 26)
end

-- relist moves r in AVAIL from old (its listing before the change) to
-- where it belongs now, and notes a slot that became leasable.
local function relist(r, old)
  local new = listing(r)
  if old == new then
    return
  end
  if old then
    redis.call('ZREM', AVAIL, old)
  end
  if new then
    redis.call('ZADD', AVAIL, r.p, new)
    if not old or new < old then -- listed anew, with fewer holders or more budget
      freed = true
    end
  end
end

-- drop deletes r; it must have no holders and no listing.
local function drop(r)
  redis.call('HDEL', RES, 'r' .. r.id)
  if r.s > 0 or r.q > 0 then
    redis.call('ZREM', SUSP, r.id)
  end
  if r.d then
    redis.call('HINCRBY', RES, '#d', -1)
  end
  if r.b then
    redis.call('HINCRBY', RES, '#b', -1)
  end
  dropped = true
end

-- suspend keeps r out of AVAIL until the later of its current end of
-- suspension and untl. The caller stores and relists r.
local function suspend(r, untl)
  if r.s >= untl then
    return
  end
  r.s = untl
  redis.call('ZADD', SUSP, math.max(untl, r.q), r.id)
end

-- resched puts r in SUSP at the end of its rest, the later of its
-- suspension and its buckets' rest, or takes it out when it has
-- neither.
local function resched(r)
  local u = math.max(r.s, r.q)
  if u > 0 then
    redis.call('ZADD', SUSP, u, r.id)
  else
    redis.call('ZREM', SUSP, r.id)
  end
end

-- unsuspend ends r's suspension, and its ejection with it, if any. The
-- caller reschedules (resched), stores and relists r.
local function unsuspend(r)
  r.s = 0
  if r.e > 0 then
    r.e = 0
    redis.call('HINCRBY', RES, '#j', -1)
  end
end

-- The buckets' arithmetic (see the fields of a resource above). A
-- bucket's level is UNITS + REM / PER units, and it gains MAX / PER
-- units per ms: with MAX = q x PER + mr, d ms (d <= PER) bring d x q
-- units and d x mr + REM of 1/PER, below PER x (min(MAX, PER) + 1) as
-- mr < min(MAX, PER). Every quantity is then an integer below 2^53 in
-- magnitude, exact in Lua's doubles, for MAX <= 2^51 and PER x
-- (min(MAX, PER) + 2) <= 2^53 (limitExact in resource.go; divmod needs
-- the last PER).

-- parse_cost reads a cost as the client sends it, 'NAME=AMOUNT,...'
-- with NAME in hex; nil for the default cost ('').
local function parse_cost(v)
  if not v or v == '' then
    return nil
  end
  local c = {}
  for n, a in string.gmatch(v, '(%x+)=(%d+)') do
    c[n] = tonumber(a)
  end
  return c
end

-- of is what cost spends of the bucket named n: 1 unless it names it.
local function of(cost, n)
  return cost and cost[n] or 1
end

-- divmod is the floor of a / p and the remainder, for integers
-- 0 <= a and 0 < p with a + p <= 2^53, exact whatever the rounding of
-- the division (its floor is off by one at most).
local function divmod(a, p)
  local q = math.floor(a / p)
  local rem = a - q * p
  if rem < 0 then
    q, rem = q - 1, rem + p
  elseif rem >= p then
    q, rem = q + 1, rem - p
  end
  return q, rem
end

-- gain is what b gains in d ms, 0 <= d <= PER, from REM rem: whole
-- units and the new REM.
local function gain(b, d, rem)
  local q, mr = divmod(b.m, b.p)
  local f, left = divmod(d * mr + rem, b.p)
  return d * q + f, left
end

-- refill brings r's buckets up to now. A clock behind r.t refills
-- nothing until it passes it, so no span is counted twice.
local function refill(r)
  local dt = now - r.t
  if dt <= 0 then
    return
  end
  r.t = now
  for _, b in ipairs(r.b) do
    if b.u < b.m then
      -- k whole PERs bring k x MAX units; a product too large to be
      -- exact is above any room, and the bucket is full either way.
      local k, d = divmod(dt, b.p)
      if k * b.m >= b.m - b.u then
        b.u, b.r = b.m, 0
      else
        local g, rem = gain(b, d, b.r)
        b.u, b.r = b.u + k * b.m + g, rem
        if b.u >= b.m then
          b.u, b.r = b.m, 0
        end
      end
    end
  end
end

-- wait_units is how many ms until b (refilled) holds units, at most
-- MAX, if nothing else changes: 0 if it does, at most LONGEST_WAIT.
local function wait_units(b, units)
  if b.u >= units then
    return 0
  end
  -- Whole PERs, MAX units each, leave 1 to MAX units to gain in the
  -- last, which takes d ms: the smallest d whose gain covers them,
  -- found from the quotient's estimate (off by a few ms at most, as
  -- left x PER may be inexact) and the exact gains around it.
  local k = divmod(units - b.u - 1, b.m)
  local left = units - b.u - k * b.m
  local d = math.min(math.max(math.ceil((left * b.p - b.r) / b.m), 0), b.p)
  while d < b.p and gain(b, d, b.r) < left do
    d = d + 1
  end
  while d > 0 and gain(b, d - 1, b.r) >= left do
    d = d - 1
  end
  return math.min(k * b.p + d, LONGEST_WAIT)
end

-- fits reports whether every bucket of r covers cost now (refilling
-- them), and, when not, whether one never will (the cost is above its
-- MAX). No cost is covered by a bucket in debt, not even 0.
local function fits(r, cost)
  if not r.b then
    return true, false
  end
  refill(r)
  local ok = true
  for _, b in ipairs(r.b) do
    local c = of(cost, b.n)
    if c > b.m then
      return false, true
    end
    if b.u < c then
      ok = false
    end
  end
  return ok, false
end

-- cover_wait is how many ms after now every bucket of r covers cost if
-- nothing else changes (refilled: see fits), or nil if one never will.
local function cover_wait(r, cost)
  local w = 0
  for _, b in ipairs(r.b) do
    local c = of(cost, b.n)
    if c > b.m then
      return nil
    end
    w = math.max(w, wait_units(b, c))
  end
  return w + math.max(r.t - now, 0)
end

-- budget_rest is until when r must rest for its buckets (refilled):
-- until each holds a unit (and so is out of debt), or 0 if each does.
-- A resource in AVAIL therefore covers the default cost, 1 of each, so
-- a call without a cost never scans.
local function budget_rest(r)
  local untl = 0
  if r.b then
    for _, b in ipairs(r.b) do
      if b.u < 1 then
        untl = math.max(untl, now + wait_units(b, 1))
      end
    end
    if untl > 0 then
      untl = untl + math.max(r.t - now, 0)
    end
  end
  return untl
end

-- full_at is when r's buckets (refilled) are all full again, or 0 if
-- they are: the later, the less budget r has left.
local function full_at(r)
  local at = 0
  if r.b then
    for _, b in ipairs(r.b) do
      if b.u < b.m then
        at = math.max(at, now + wait_units(b, b.m))
      end
    end
    if at > 0 then
      at = at + math.max(r.t - now, 0)
    end
  end
  return at
end

-- set_rest makes r rest for its buckets until q (0: not), counted in
-- '#l'. An excluded or draining resource does not rest: Include works
-- its rest out again. The caller stores and relists r.
local function set_rest(r, q)
  r.a = full_at(r)
  if r.x or r.d then
    q = 0
  end
  if q == r.q then
    return
  end
  if (q > 0) ~= (r.q > 0) then
    redis.call('HINCRBY', RES, '#l', q > 0 and 1 or -1)
  end
  r.q = q
  resched(r)
end

-- charge takes cost from r's buckets, which cover it (fits), and makes
-- r rest if one is left without a unit. It returns what was taken, as
-- the lease records it ('NAME=AMOUNT,...' for each bucket), or nil for
-- a resource without buckets.
local function charge(r, cost)
  if not r.b then
    return nil
  end
  refill(r)
  local paid = {}
  for i, b in ipairs(r.b) do
    local c = of(cost, b.n)
    b.u = b.u - c
    paid[i] = b.n .. '=' .. num(c)
  end
  set_rest(r, budget_rest(r))
  return table.concat(paid, ',')
end

-- settle_bucket replaces the estimate est that a lease took from b by
-- what it spent, act: a refund up to full, or a further take down to
-- MIN_UNITS at most. b is refilled.
local function settle_bucket(b, est, act)
  if act < est then
    if est - act >= b.m - b.u then
      b.u, b.r = b.m, 0
    else
      b.u = b.u + est - act
    end
  elseif act > est then
    if act - est > b.u - MIN_UNITS then
      b.u, b.r = MIN_UNITS, 0
    else
      b.u = b.u - (act - est)
    end
  end
end

-- next_token records and returns the next fencing token: the later of
-- the last one plus one, which makes tokens increase by construction
-- while TOKEN survives, and the server clock in microseconds, so that
-- they most likely keep increasing when it does not (a restart that lost
-- the data, a promoted replica that lacked the last grants): see doc.go.
local function next_token()
  local token = math.max((tonumber(redis.call('GET', TOKEN)) or 0) + 1, now_us)
  token = string.format('%.0f', token)
  redis.call('SET', TOKEN, token)
  return token
end

-- owner_entry is the entry in OWNER of a lease of request on resource
-- id that paid paid from its buckets (nil: it has none).
local function owner_entry(request, id, paid)
  if paid then
    return request .. '+' .. paid .. ':' .. id
  end
  return request .. ':' .. id
end

-- grant leases a slot of r, already counted in its holders, to request
-- for ttl ms, and returns the token; paid is what it took from r's
-- buckets (charge).
local function grant(r, request, ttl, paid)
  local token = next_token()
  redis.call('ZADD', LEASES, now + ttl, token)
  redis.call('HSET', OWNER, token, owner_entry(request, r.id, paid))
  redis.call('HSET', REQ, request, token)
  return token
end

-- waiting parses REQ's entry of a waiting request: the expiry of its
-- queue entry, its lease TTL, its process and its cost ('' for the
-- default); nil for another entry.
local function waiting(v)
  if v and string.byte(v, 1) == 113 then -- 'q'
    local exp, ttl, proc, cost = string.match(v, '^q (%d+) (%d+) (%S+) ?(%S*)$')
    return tonumber(exp), tonumber(ttl), proc, cost
  end
  return nil
end

-- waiting_entry is REQ's entry of a request waiting until exp.
local function waiting_entry(exp, ttl, proc, cost)
  local v = 'q ' .. exp .. ' ' .. ttl .. ' ' .. proc
  if cost ~= '' then
    v = v .. ' ' .. cost
  end
  return v
end

-- oldest returns the oldest waiter whose entry holds (request, lease
-- TTL, process, cost), or nil; the expired entries before it go (their
-- waiters left without a word, or missed their re-check and queue
-- again when they make it).
local function oldest()
  while true do
    local first = redis.call('ZRANGE', QUEUE, 0, 0)[1]
    if not first then
      return nil
    end
    local v = redis.call('HGET', REQ, first)
    local exp, ttl, proc, cost = waiting(v)
    if exp and exp >= now then
      return first, ttl, proc, cost
    end
    redis.call('ZREM', QUEUE, first)
    if exp then
      redis.call('HDEL', REQ, first)
    end
  end
end

-- tell publishes message to process proc, through pcall as hand says.
local function tell(proc, message)
  local res = redis.pcall('PUBLISH', WAKE .. ':' .. proc, message)
  if type(res) == 'table' and res.err then
    wake_err = res.err
  end
end

-- hand grants a slot of r (counted in its holders) to the waiter
-- request and tells its process. PUBLISH, which an ACL can deny, goes
-- through pcall: nothing after the change may fail the script (a
-- script that applied its change and then raised an error would report
-- a failure for a change made, and its retry the wrong outcome). The
-- waiter finds the grant at its next re-check then.
local function hand(r, request, ttl, proc, paid)
  redis.call('ZREM', QUEUE, request)
  local token = grant(r, request, ttl, paid)
  tell(proc, request .. ' ' .. token .. ' ' .. r.id)
end

-- SCAN_DEPTH bounds the search of AVAIL for a resource whose buckets
-- cover a cost that the best one's do not: the SCAN_DEPTH best
-- resources. One further down is not found until it rises (the caller
-- waits meanwhile), unless none of those will ever cover the cost: the
-- search then goes on down, SCAN_DEPTH at a time.
local SCAN_DEPTH = 64

-- covering returns the best listed resource whose buckets cover cost
-- (nil: the default cost, which every listed one covers) and its
-- listing, or nil with the soonest time (ms from now) at which one of
-- those looked at will, or nil if none ever will.
local function covering(cost)
  if not cost then
    local best = redis.call('ZRANGE', AVAIL, 0, 0)[1]
    if best then
      return load(listed_id(best)), best
    end
    return nil, nil
  end
  local soonest = nil
  local from = 0
  while true do
    local page = redis.call('ZRANGE', AVAIL, from, from + SCAN_DEPTH - 1)
    for _, m in ipairs(page) do
      local r = load(listed_id(m))
      local ok, never = fits(r, cost)
      if ok then
        return r, m
      end
      if not never then
        local w = cover_wait(r, cost)
        if not soonest or w < soonest then
          soonest = w
        end
      end
    end
    if soonest or #page < SCAN_DEPTH then
      return nil, soonest
    end
    from = from + SCAN_DEPTH
  end
end

-- lease_to takes a slot of r (listed as old) for request: its holders,
-- its buckets' cost, its listing; and returns what it paid.
local function lease_to(r, old, cost)
  r.h = r.h + 1
  local paid = charge(r, cost)
  store(r)
  relist(r, old)
  return paid
end

-- serve hands the leasable slots to the oldest waiters, best first, as
-- long as both last. It is strict FIFO: an oldest waiter whose cost no
-- listed resource covers yet stops it, and the waiters behind wait too,
-- until a refill or a refund covers it (see waiter_event): a big call
-- is never starved by small ones, and buckets refill, so none waits
-- for ever. A slot freed for such a waiter, which a refill of the
-- slot's buckets will cover, is nobody's event when it is due: unless
-- quiet (the waiter's own re-check, which learns it from the reply),
-- the waiter is told to look again, and its re-check learns when.
local function serve(quiet)
  freed = false
  while true do
    local request, ttl, proc, cost = oldest()
    if not request then
      return
    end
    -- m is r's listing, or without r the time until a refill covers
    -- the cost, if one will.
    local r, m = covering(parse_cost(cost))
    if not r then
      if m and not quiet then
        tell(proc, request)
      end
      return
    end
    hand(r, request, ttl, proc, lease_to(r, m, parse_cost(cost)))
  end
end

-- split_owner returns the acquire request, the resource ID and what the
-- lease paid from its buckets (nil: none) of an entry of OWNER.
local function split_owner(owner)
  local sep = string.find(owner, ':', 1, true)
  local head = string.sub(owner, 1, sep - 1)
  local plus = string.find(head, '+', 1, true)
  if plus then
    return string.sub(head, 1, plus - 1), string.sub(owner, sep + 1), string.sub(head, plus + 1)
  end
  return head, string.sub(owner, sep + 1), nil
end

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
    redis.call('HINCRBY', RES, '#j', 1)
  end
  r.e = math.max(r.e, now + d)
  suspend(r, r.e)
end

-- end_lease removes the lease token and frees its slot, which goes to
-- the oldest waiter if there is one (and its buckets cover the waiter's
-- cost); a draining resource leaves with its last lease. cool > 0
-- suspends the resource until now + cool in the same step (Cooldown).
-- how is how the hold went (see health). owner is the token's entry in
-- OWNER if the caller has read it already.
local function end_lease(token, cool, owner, how)
  owner = owner or redis.call('HGET', OWNER, token)
  redis.call('ZREM', LEASES, token)
  redis.call('HDEL', OWNER, token)
  if not owner then
    return
  end
  local request, id = split_owner(owner)
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
    local waiter, ttl, proc, cost = oldest()
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
    if not waiter then
      freed = false -- nothing to serve
    end
    return
  end
  store(r)
  relist(r, old)
end

-- add_resource puts a new resource in the pool, available at once.
local function add_resource(id, prio, cap, limits)
  local r = { id = id, c = tonumber(cap), h = 0, s = 0, p = prio, q = 0, e = 0, a = 0 }
  if limits then
    r.t, r.b = now, limits
    for _, b in ipairs(r.b) do
      b.u, b.r = b.m, 0
    end
    redis.call('HINCRBY', RES, '#b', 1)
  end
  store(r)
  redis.call('HINCRBY', RES, '#n', 1)
  relist(r, nil)
end

-- remove_resource deletes r, which is not draining; with holders, r
-- drains: it is gone for every operation but the end of its leases, and
-- leaves with the last one.
local function remove_resource(r)
  local old = listing(r)
  if old then
    redis.call('ZREM', AVAIL, old)
  end
  redis.call('HINCRBY', RES, '#n', -1)
  dropped = true
  if r.x then
    redis.call('HINCRBY', RES, '#x', -1)
  end
  if r.s > 0 or r.q > 0 then
    redis.call('ZREM', SUSP, r.id)
  end
  if r.e > 0 then
    redis.call('HINCRBY', RES, '#j', -1)
  end
  if r.q > 0 then
    redis.call('HINCRBY', RES, '#l', -1)
  end
  r.x, r.s, r.q, r.e = false, 0, 0, 0
  if r.h == 0 then
    drop(r)
    return
  end
  r.d = true
  store(r)
  redis.call('HINCRBY', RES, '#d', 1)
end

-- parse_limits reads a resource's limits as the client sends them,
-- 'NAME,MAX,PER;...' with NAME in hex and PER in ms: buckets without a
-- level, or nil for none.
local function parse_limits(v)
  if not v or v == '' then
    return nil
  end
  local bs = {}
  for n, m, p in string.gmatch(v, '(%x+),(%d+),(%d+)') do
    bs[#bs + 1] = { n = n, m = tonumber(m), p = tonumber(p), born = 0 }
  end
  return bs
end

-- limits_of is r's limits as the client sends them.
local function limits_of(r)
  if not r.b then
    return ''
  end
  local out = {}
  for i, b in ipairs(r.b) do
    out[i] = b.n .. ',' .. num(b.m) .. ',' .. num(b.p)
  end
  return table.concat(out, ';')
end

-- retune gives r the buckets of limits (nil: none), as the core's
-- Update does: a bucket whose name stays keeps its level, brought up to
-- now and cut to its new MAX (to a whole unit, rounding down, if its
-- PER changes), so a larger MAX is reached by refilling; a new one
-- starts full; a dropped one goes.
local function retune(r, limits)
  if r.b then
    refill(r)
  end
  if (r.b ~= nil) ~= (limits ~= nil) then
    redis.call('HINCRBY', RES, '#b', limits and 1 or -1)
  end
  if not limits then
    r.b, r.t = nil, nil
  else
    local old = {}
    for _, b in ipairs(r.b or {}) do
      old[b.n] = b
    end
    for _, b in ipairs(limits) do
      local o = old[b.n]
      b.born = o and o.born or 0
      if not o and r.h > 0 then
        -- The leases running did not pay into it.
        b.born = tonumber(redis.call('GET', TOKEN)) or 0
      end
      if not o or o.u >= b.m then
        b.u, b.r = b.m, 0
      elseif o.p == b.p then
        b.u, b.r = o.u, o.r
      else
        b.u, b.r = o.u, 0
      end
    end
    r.b, r.t = limits, r.t or now
  end
  set_rest(r, budget_rest(r))
end

-- configure sets r's priority and, unless cap is nil, its capacity (a
-- lower one than its holders takes effect as leases end) and its limits
-- (retune); a draining r is back in the pool, its leases running on.
local function configure(r, prio, cap, limits)
  local old, back = listing(r), r.d
  if r.d then
    r.d = false
    redis.call('HINCRBY', RES, '#d', -1)
    redis.call('HINCRBY', RES, '#n', 1)
  end
  r.p = prio
  if cap then
    r.c = tonumber(cap)
    if limits ~= limits_of(r) then
      retune(r, parse_limits(limits))
    elseif back and r.b then
      -- A draining resource does not rest (set_rest), though Settle
      -- may leave it in debt: back in the pool, it rests if it must.
      refill(r)
      set_rest(r, budget_rest(r))
    end
  end
  store(r)
  if old then
    -- Listed again even if unchanged: the priority may differ.
    redis.call('ZREM', AVAIL, old)
    old = nil
  end
  relist(r, old)
end

-- reclaim applies what the passage of time decided since the last
-- script: leases past their deadline end (this is what makes a crashed
-- holder's leases come back, with no process doing anything), and
-- suspensions that are over end.
local function reclaim()
  local due = redis.call('ZRANGEBYSCORE', LEASES, '-inf', now)
  for _, token in ipairs(due) do
    end_lease(token, 0, nil, 'expired')
  end
  if #due > 0 then
    redis.call('HINCRBY', RES, '#e', #due)
  end
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', SUSP, '-inf', now)) do
    redis.call('ZREM', SUSP, id)
    local r = load(id)
    if r then
      unsuspend(r)
      if r.q > 0 then
        refill(r)
        local q = budget_rest(r)
        if q == 0 then
          redis.call('HINCRBY', RES, '#l', -1)
        else
          redis.call('ZADD', SUSP, q, id)
        end
        r.q = q
      end
      store(r)
      relist(r, nil)
    end
  end
end

-- next_event is the time in ms until the server will next free something
-- by itself (a lease deadline or the end of a suspension), or -1. Waiters
-- use it to re-check then, since nothing is published when time passes.
local function next_event()
  local at = nil
  for _, key in ipairs({ LEASES, SUSP }) do
    local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    if first[2] then
      local t = tonumber(first[2])
      if not at or t < at then
        at = t
      end
    end
  end
  if not at then
    return -1
  end
  return math.max(at - now, 0)
end

-- waiter_event is next_event, or sooner the time until a listed
-- resource's buckets cover the oldest waiter's cost (see covering), for
-- the replies to waiters: refills are nobody's event, so a waiter
-- re-checks then and its re-check serves the oldest. budgets: the pool
-- has resources with buckets (without, it is next_event).
local function waiter_event(budgets)
  local at = next_event()
  local first = budgets and redis.call('ZRANGE', QUEUE, 0, 0)[1]
  if first then
    local _, _, _, cost = waiting(redis.call('HGET', REQ, first))
    cost = parse_cost(cost)
    if cost then
      local r, w = covering(cost)
      if r then
        w = 0
      end
      if w and (at < 0 or w < at) then
        at = w
      end
    end
  end
  return at
end

-- exceeds reports whether the pool has a resource (draining ones aside)
-- and cost is above a bucket's MAX on every one: no wait would end. It
-- reads every resource, and runs only for a cost that no listed
-- resource covers.
local function exceeds(cost)
  local all = redis.call('HGETALL', RES)
  local any = false
  for i = 1, #all, 2 do
    if string.byte(all[i], 1) == 114 then -- 'r'
      local f, rest = string.match(all[i + 1], '^%d+ %d+ (%S) %d+ %S+(.*)$')
      if f ~= 'd' then
        any = true
        local r = { q = 0, e = 0 }
        parse_ext(r, rest)
        local never = false
        for _, b in ipairs(r.b or {}) do
          if of(cost, b.n) > b.m then
            never = true
            break
          end
        end
        if not never then
          return false
        end
      end
    end
  end
  return any
end

-- tidy empties the queue of a pool left with no resource (draining
-- ones serve no waiter): each waiter leaves it and is told to look
-- again (a message of its request alone), so that it finds the pool
-- empty at once, not at its next re-check. Once nothing drains either,
-- it deletes every key of the pool but TOKEN and the DONE buckets
-- (which expire by themselves).
local function tidy()
  if not dropped then
    return
  end
  dropped = false
  local n = redis.call('HMGET', RES, '#n', '#d')
  if (tonumber(n[1]) or 0) > 0 then
    return
  end
  for _, request in ipairs(redis.call('ZRANGE', QUEUE, 0, -1)) do
    local _, _, proc = waiting(redis.call('HGET', REQ, request))
    if proc then
      redis.call('HDEL', REQ, request)
      tell(proc, request)
    end
  end
  redis.call('DEL', QUEUE)
  if (tonumber(n[2]) or 0) == 0 then
    redis.call('DEL', RES, AVAIL, LEASES, OWNER, SUSP, REQ)
  end
end

-- begin sets up a call with its keys and arguments, and applies what
-- time decided since the last one.
local function begin(keys, argv)
  KEYS, ARGV = keys, argv
  RES, AVAIL, LEASES, OWNER, SUSP, REQ = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
  DONE = { KEYS[7], KEYS[8] }
  TOKEN, QUEUE = KEYS[9], KEYS[10]
  WAKE = ARGV[1]
  REQUEST, WINDOW, RECORD = ARGV[#ARGV - 2], tonumber(ARGV[#ARGV - 1]), ARGV[#ARGV] == '1'
  local clock = redis.call('TIME')
  now_us = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
  now = math.floor(now_us / 1000)
  epoch = math.floor(now / WINDOW)
  freed, dropped, wake_err, epochs, EJECT = false, false, 0, false, nil
  reclaim()
end
