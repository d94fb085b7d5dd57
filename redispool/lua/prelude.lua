-- Shared by every script of the pool; each script is this prelude
-- followed by its own body, so that every state change is one atomic
-- step on the server.
--
-- KEYS (all share the {name} hash tag, so one Redis Cluster slot):
--   1 res     hash: per resource 'c:ID' capacity, 'p:ID' priority,
--             'h:ID' holders (absent = 0), 'x:ID' excluded, 's:ID' end
--             of its suspension (ms), 'd:ID' removed while leased;
--             pool counters '#n' resources, '#x' excluded, '#d'
--             draining, '#e' expired leases
--   2 avail   zset: resources that can be leased now, score = priority,
--             member = 10-digit holders .. ':' .. ID, so that among
--             equal priorities fewer holders sort first
--   3 leases  zset: token -> deadline (ms, server clock)
--   4 owner   hash: token -> request .. ':' .. ID (request: 32 hex digits)
--   5 susp    zset: ID -> end of suspension (ms, server clock)
--   6 req     hash: request -> token, the lease an acquire request got,
--             so that a retried request gets the same lease and an
--             abandoned one (its reply lost) can be given back
--   7 done0   hash: '#e' an epoch (server ms / window), and for each
--   8 done1   write request of that epoch its status; for an acquire
--             request, that it was abandoned. A write's status is
--             recorded in the bucket of the current epoch, so that the
--             same request sent again (go-redis resends a command whose
--             connection broke before its reply) gets the first answer
--             instead of applying twice. A bucket is emptied when its
--             epoch comes round again: a record lives one to two
--             windows, and the two keys hold no more than that.
--   9 token   string: the last fencing token granted. It outlives the
--             pool's other keys (tidy leaves it), so that tokens never go
--             back while the data survives, whatever the clocks do.
-- ARGV[1] is always the pub/sub channel that wakes waiters; the last
-- three are the call's request ('' for none), the window (ms) and '1'
-- when the call's status is to be recorded.
--
-- The operation's body follows, as the function main (see scripts.go);
-- epilogue.lua runs it and finish, and replies {status, wake error or
-- 0, the rest of main's reply}.
--
-- Time is the server's (TIME), read once per script: with effect
-- replication (the only mode since Redis 7, the default since 5) a
-- script that reads TIME replicates its writes, not itself, so replicas
-- and the AOF stay exact.
local RES, AVAIL, LEASES, OWNER, SUSP, REQ = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local DONE = { KEYS[7], KEYS[8] }
local TOKEN = KEYS[9]
local WAKE = ARGV[1]
local REQUEST, WINDOW, RECORD = ARGV[#ARGV - 2], tonumber(ARGV[#ARGV - 1]), ARGV[#ARGV] == '1'

local clock = redis.call('TIME')
local now_us = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local now = math.floor(now_us / 1000)

-- recorded is the status recorded for request in this epoch or the
-- last, or nil.
local function recorded(request)
  local epoch = math.floor(now / WINDOW)
  for _, key in ipairs(DONE) do
    local v = redis.call('HMGET', key, '#e', request)
    if v[2] and (tonumber(v[1]) or -1) >= epoch - 1 then
      return v[2]
    end
  end
  return nil
end

-- record keeps status for request in the bucket of this epoch, emptied
-- first if it holds an older one. The bucket expires two windows after
-- its last record, so that an idle pool's records go.
local function record(request, status)
  local epoch = math.floor(now / WINDOW)
  local key = DONE[epoch % 2 + 1]
  if tonumber(redis.call('HGET', key, '#e')) ~= epoch then
    redis.call('UNLINK', key)
    redis.call('HSET', key, '#e', epoch)
  end
  redis.call('HSET', key, request, status)
  redis.call('PEXPIRE', key, 2 * WINDOW)
end

-- Status codes returned as the first element of every reply; the client
-- maps the negative ones to sentinel errors.
local OK, NONE, NOT_FOUND, DUPLICATE, DRAINING, NOT_ACTIVE, NOT_EXCLUDED, NOT_INACTIVE, EMPTY = 1, 0, -1, -2, -3, -4, -5, -6, -7

local freed = 0      -- slots made leasable by this script: waiters to wake
local dropped = false -- a resource left for good: the pool may be empty now

local function load(id)
  local v = redis.call('HMGET', RES, 'c:' .. id, 'h:' .. id, 'p:' .. id, 'x:' .. id, 's:' .. id, 'd:' .. id)
  if not v[1] then
    return nil
  end
  return { id = id, c = tonumber(v[1]), h = tonumber(v[2]) or 0, p = v[3], x = v[4], s = v[5], d = v[6] }
end

local function eligible(r)
  return not r.x and not r.s and not r.d and r.h < r.c
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
-- where it belongs now.
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
  end
end

local function set_holders(r, h)
  r.h = h
  if h > 0 then
    redis.call('HSET', RES, 'h:' .. r.id, h)
  else
    redis.call('HDEL', RES, 'h:' .. r.id)
  end
end

-- drop deletes r; it must have no holders and no listing.
local function drop(r)
  local id = r.id
  redis.call('HDEL', RES, 'c:' .. id, 'p:' .. id, 'h:' .. id, 'x:' .. id, 's:' .. id, 'd:' .. id)
  redis.call('ZREM', SUSP, id)
  if r.d then
    redis.call('HINCRBY', RES, '#d', -1)
  end
  dropped = true
end

-- suspend keeps r out of AVAIL until the later of its current end of
-- suspension and untl. The caller relists r.
local function suspend(r, untl)
  local cur = tonumber(r.s)
  if cur and cur >= untl then
    return
  end
  r.s = string.format('%.0f', untl)
  redis.call('HSET', RES, 's:' .. r.id, r.s)
  redis.call('ZADD', SUSP, r.s, r.id)
end

-- add_resource puts a new resource in the pool, available at once.
local function add_resource(id, prio, cap)
  redis.call('HSET', RES, 'c:' .. id, cap, 'p:' .. id, prio)
  redis.call('HINCRBY', RES, '#n', 1)
  local r = load(id)
  relist(r, nil)
  freed = freed + r.c
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
  if r.x then
    redis.call('HINCRBY', RES, '#x', -1)
  end
  if r.h == 0 then
    drop(r)
  else
    redis.call('HDEL', RES, 'x:' .. r.id, 's:' .. r.id)
    redis.call('ZREM', SUSP, r.id)
    redis.call('HSET', RES, 'd:' .. r.id, 1)
    redis.call('HINCRBY', RES, '#d', 1)
  end
end

-- configure sets r's priority and, unless cap is nil, its capacity (a
-- lower one than its holders takes effect as leases end); a draining r
-- is back in the pool, its leases running on.
local function configure(r, prio, cap)
  local old = listing(r)
  local free = eligible(r) and r.c - r.h or 0
  if r.d then
    r.d = nil
    redis.call('HDEL', RES, 'd:' .. r.id)
    redis.call('HINCRBY', RES, '#d', -1)
    redis.call('HINCRBY', RES, '#n', 1)
  end
  r.p = prio
  redis.call('HSET', RES, 'p:' .. r.id, prio)
  if cap then
    r.c = tonumber(cap)
    redis.call('HSET', RES, 'c:' .. r.id, cap)
  end
  if old then
    redis.call('ZREM', AVAIL, old)
  end
  local new = listing(r)
  if new then
    redis.call('ZADD', AVAIL, r.p, new)
  end
  local now_free = eligible(r) and r.c - r.h or 0
  if now_free > free then
    freed = freed + now_free - free
  end
end

-- end_lease removes the lease token and frees its slot; a draining
-- resource leaves with its last lease. cool > 0 suspends the resource
-- until now + cool in the same step (Cooldown). owner is the token's
-- entry in OWNER if the caller has read it already.
-- split_owner returns the acquire request and the resource ID of an
-- entry of OWNER.
local function split_owner(owner)
  local sep = string.find(owner, ':', 1, true)
  return string.sub(owner, 1, sep - 1), string.sub(owner, sep + 1)
end

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
  set_holders(r, r.h - 1)
  if r.d then
    if r.h == 0 then
      drop(r)
    end
    return
  end
  if cool > 0 and not r.x then
    suspend(r, now + cool)
  end
  relist(r, old)
  if eligible(r) then
    freed = freed + 1
  end
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
    redis.call('HDEL', RES, 's:' .. id)
    local r = load(id)
    if r then
      r.s = nil
      relist(r, nil)
      if eligible(r) then
        freed = freed + (r.c - r.h)
      end
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

-- tidy deletes every key of a pool left with no resource, but TOKEN.
local function tidy()
  if dropped then
    dropped = false
    local n = redis.call('HMGET', RES, '#n', '#d')
    if (tonumber(n[1]) or 0) == 0 and (tonumber(n[2]) or 0) == 0 then
      redis.call('DEL', RES, AVAIL, LEASES, OWNER, SUSP, REQ)
    end
  end
end

-- finish tidies and wakes waiters for the slots this script freed. It
-- runs after the script's change, so nothing in it may fail the script:
-- a script that applied its change and then raised an error would
-- report a failure for a change made, and its retry the wrong outcome.
-- So PUBLISH, which an ACL can deny, goes through pcall; finish returns
-- its error (or 0) for the client to count.
local function finish()
  tidy()
  if freed > 0 then
    local res = redis.pcall('PUBLISH', WAKE, freed)
    if type(res) == 'table' and res.err then
      return res.err
    end
  end
  return 0
end

reclaim()
