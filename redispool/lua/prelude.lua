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
--             more space-separated fields may follow, kept as they
--             are. One field per resource keeps every lookup O(1)
--             whatever the pool's size. Pool counters: '#n' resources,
--             '#x' excluded, '#d' draining, '#e' expired leases, '#q'
--             waiters queued so far (their order)
--   2 avail   zset: resources that can be leased now, score = priority,
--             member = 10-digit holders .. ':' .. ID, so that among
--             equal priorities fewer holders sort first
--   3 leases  zset: token -> deadline (ms, server clock)
--   4 owner   hash: token -> request .. ':' .. ID (request: 32 hex digits)
--   5 susp    zset: ID -> end of suspension (ms, server clock)
--   6 req     hash: request -> token, the lease an acquire request got,
--             so that a retried request gets the same lease and an
--             abandoned one (its reply lost) can be given back; or, for
--             a request waiting in QUEUE, 'q EXPIRY TTL PROCESS': until
--             when its entry holds (the waiter re-checks before then),
--             its lease TTL (ms) and its process's id
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
local OK, NONE, NOT_FOUND, DUPLICATE, DRAINING, NOT_ACTIVE, NOT_EXCLUDED, NOT_INACTIVE, EMPTY, QUEUED =
  1, 0, -1, -2, -3, -4, -5, -6, -7, 2

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

-- load reads resource id, or nil.
local function load(id)
  local v = redis.call('HGET', RES, 'r' .. id)
  if not v then
    return nil
  end
  local c, h, f, s, p, rest = string.match(v, '^(%d+) (%d+) (%S) (%d+) (%S+)(.*)$')
  return { id = id, c = tonumber(c), h = tonumber(h), x = f == 'x', d = f == 'd', s = tonumber(s), p = p, rest = rest }
end

-- store writes r back.
local function store(r)
  local f = (r.x and 'x') or (r.d and 'd') or '-'
  redis.call('HSET', RES, 'r' .. r.id, string.format('%d %d %s %d %s', r.c, r.h, f, r.s, r.p) .. (r.rest or ''))
end

local function eligible(r)
  return not r.x and r.s == 0 and not r.d and r.h < r.c
end

-- listing is r's member in AVAIL, or nil when r is not leasable. The ID
-- is concatenated, not formatted: Lua 5.1's '%s' stops at a NUL byte in
-- strings under 100 bytes, which would list a resource under another ID.
local function listing(r)
  if eligible(r) then
    return string.format('%010d', r.h) .. ':' .. r.id
  end
  return nil
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
    if not old or new < old then -- listed anew, or with fewer holders
      freed = true
    end
  end
end

-- drop deletes r; it must have no holders and no listing.
local function drop(r)
  redis.call('HDEL', RES, 'r' .. r.id)
  if r.s > 0 then
    redis.call('ZREM', SUSP, r.id)
  end
  if r.d then
    redis.call('HINCRBY', RES, '#d', -1)
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
  redis.call('ZADD', SUSP, untl, r.id)
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

-- grant leases a slot of r, already counted in its holders, to request
-- for ttl ms, and returns the token.
local function grant(r, request, ttl)
  local token = next_token()
  redis.call('ZADD', LEASES, now + ttl, token)
  redis.call('HSET', OWNER, token, request .. ':' .. r.id)
  redis.call('HSET', REQ, request, token)
  return token
end

-- waiting parses REQ's entry of a waiting request: the expiry of its
-- queue entry, its lease TTL and its process; nil for another entry.
local function waiting(v)
  if v and string.byte(v, 1) == 113 then -- 'q'
    local exp, ttl, proc = string.match(v, '^q (%d+) (%d+) (%S+)$')
    return tonumber(exp), tonumber(ttl), proc
  end
  return nil
end

-- oldest returns the oldest waiter whose entry holds (request, lease
-- TTL, process), or nil; the expired entries before it go (their
-- waiters left without a word, or missed their re-check and queue
-- again when they make it).
local function oldest()
  while true do
    local first = redis.call('ZRANGE', QUEUE, 0, 0)[1]
    if not first then
      return nil
    end
    local v = redis.call('HGET', REQ, first)
    local exp, ttl, proc = waiting(v)
    if exp and exp >= now then
      return first, ttl, proc
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
local function hand(r, request, ttl, proc)
  redis.call('ZREM', QUEUE, request)
  local token = grant(r, request, ttl)
  tell(proc, request .. ' ' .. token .. ' ' .. r.id)
end

-- serve hands the leasable slots to the oldest waiters, best first, as
-- long as both last.
local function serve()
  freed = false
  while true do
    local request, ttl, proc = oldest()
    if not request then
      return
    end
    local best = redis.call('ZRANGE', AVAIL, 0, 0)[1]
    if not best then
      return
    end
    local r = load(string.sub(best, 12))
    r.h = r.h + 1
    store(r)
    relist(r, best)
    hand(r, request, ttl, proc)
  end
end

-- split_owner returns the acquire request and the resource ID of an
-- entry of OWNER.
local function split_owner(owner)
  local sep = string.find(owner, ':', 1, true)
  return string.sub(owner, 1, sep - 1), string.sub(owner, sep + 1)
end

-- end_lease removes the lease token and frees its slot, which goes to
-- the oldest waiter if there is one; a draining resource leaves with
-- its last lease. cool > 0 suspends the resource until now + cool in
-- the same step (Cooldown). owner is the token's entry in OWNER if the
-- caller has read it already.
local function end_lease(token, cool, owner)
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
  if cool > 0 and not r.x then
    suspend(r, now + cool)
  end
  if eligible(r) then
    local waiter, ttl, proc = oldest()
    if waiter then
      -- Straight to the waiter: r's holders and listing stay as they
      -- were.
      r.h = r.h + 1
      hand(r, waiter, ttl, proc)
      return
    end
  end
  store(r)
  relist(r, old)
  if eligible(r) then
    freed = false -- oldest found no waiter: nothing to serve
  end
end

-- add_resource puts a new resource in the pool, available at once.
local function add_resource(id, prio, cap)
  local r = { id = id, c = tonumber(cap), h = 0, s = 0, p = prio }
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
  if r.h == 0 then
    drop(r)
    return
  end
  if r.s > 0 then
    redis.call('ZREM', SUSP, r.id)
  end
  r.x, r.s, r.d = false, 0, true
  store(r)
  redis.call('HINCRBY', RES, '#d', 1)
end

-- configure sets r's priority and, unless cap is nil, its capacity (a
-- lower one than its holders takes effect as leases end); a draining r
-- is back in the pool, its leases running on.
local function configure(r, prio, cap)
  local old = listing(r)
  if r.d then
    r.d = false
    redis.call('HINCRBY', RES, '#d', -1)
    redis.call('HINCRBY', RES, '#n', 1)
  end
  r.p = prio
  if cap then
    r.c = tonumber(cap)
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
    end_lease(token, 0)
  end
  if #due > 0 then
    redis.call('HINCRBY', RES, '#e', #due)
  end
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', SUSP, '-inf', now)) do
    redis.call('ZREM', SUSP, id)
    local r = load(id)
    if r then
      r.s = 0
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
  freed, dropped, wake_err, epochs = false, false, 0, false
  reclaim()
end
