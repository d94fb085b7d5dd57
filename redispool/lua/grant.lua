-- Part of the pool's helpers (see scripts.go): fencing tokens, grants,
-- and the waiters' queue that freed slots are handed to.

-- next_token records and returns the next fencing token: the later of
-- the last one plus one, which makes tokens increase by construction
-- while TOKEN survives, and the server clock in microseconds, so that
-- they most likely keep increasing when it does not (a restart that lost
-- the data, a promoted replica that lacked the last grants): see doc.go.
-- Both are decimal integers without leading zeros, so the longer text,
-- or of equal lengths the greater, is the greater number. GETSET, not
-- SET ... GET, which servers before 6.2 lack.
local function next_token()
  local token = now_us_text
  local last = redis.call('GETSET', TOKEN, token)
  if last and (#last > #token or (#last == #token and last >= token)) then
    token = num(tonumber(last) + 1)
    redis.call('SET', TOKEN, token)
  end
  return token
end

-- lease_member is the member in LEASES of the lease token of request
-- on resource id.
local function lease_member(token, request, id)
  return token .. ':' .. request .. ':' .. id
end

-- split_lease returns the token, the acquire request and the resource
-- ID of a member of LEASES (a request has no ':'; an ID may).
local function split_lease(lease)
  local a = string.find(lease, ':', 1, true)
  local b = string.find(lease, ':', a + 1, true)
  return string.sub(lease, 1, a - 1), string.sub(lease, a + 1, b - 1), string.sub(lease, b + 1)
end

-- lease_entry is the entry in REQ of the lease token on resource id
-- that paid paid from its buckets (nil: it has none); part, for a
-- grant to a class (fair.lua), is 'CID~SHARE~TENANT PAID' (see
-- account), which Settle corrects.
local function lease_entry(token, id, paid, part)
  local head = token
  if paid then
    head = head .. '+' .. paid
  end
  if part then
    head = head .. '~' .. part
  end
  return head .. ':' .. id
end

-- split_entry returns the token, the resource ID, what the lease
-- paid from its buckets (nil: none) and its class's part (lease_entry;
-- nil: none) of a lease's entry in REQ; nil for no entry or a waiter's
-- ('q ...': a token is digits).
local function split_entry(entry)
  if not entry or string.byte(entry, 1) == 113 then
    return nil
  end
  local sep = string.find(entry, ':', 1, true)
  local head = string.sub(entry, 1, sep - 1)
  local part = nil
  local tilde = string.find(head, '~', 1, true)
  if tilde then
    head, part = string.sub(head, 1, tilde - 1), string.sub(head, tilde + 1)
  end
  local plus = string.find(head, '+', 1, true)
  if plus then
    return string.sub(head, 1, plus - 1), string.sub(entry, sep + 1), string.sub(head, plus + 1), part
  end
  return head, string.sub(entry, sep + 1), nil, part
end

-- grant leases a slot of r, already counted in its holders, to request
-- for ttl ms, and returns the token; paid is what it took from r's
-- buckets (charge), part its class's part (lease_entry).
local function grant(r, request, ttl, paid, part)
  local token = next_token()
  redis.call('ZADD', LEASES, num(now + ttl), lease_member(token, request, r.id))
  redis.call('HSET', REQ, request, lease_entry(token, r.id, paid, part))
  return token
end

-- waiting parses REQ's entry of a waiting request: the expiry of its
-- queue entry, its lease TTL, its process, its cost ('' for the
-- default) and its class field (nil: plain; see enqueue); nil for
-- another entry.
local function waiting(v)
  if v and string.byte(v, 1) == 113 then -- 'q'
    local exp, ttl, proc, cost, cls = string.match(v, '^q (%d+) (%d+) (%S+) ?([^@ ]*) ?@?(%S*)$')
    if cls == '' then
      cls = nil
    end
    return tonumber(exp), tonumber(ttl), proc, cost, cls
  end
  return nil
end

-- waiting_entry is REQ's entry of a request waiting until exp.
local function waiting_entry(exp, ttl, proc, cost, cls)
  local v = 'q ' .. num(exp) .. ' ' .. num(ttl) .. ' ' .. proc
  if cost ~= '' then
    v = v .. ' ' .. cost
  end
  if cls then
    v = v .. ' @' .. cls
  end
  return v
end

-- fair returns the helpers of a fair pool (fair.lua).
local fair

-- oldest returns the oldest waiter whose entry holds (request, lease
-- TTL, process, cost, class field), or nil; the expired entries before
-- it go (their waiters left without a word, or missed their re-check
-- and queue again when they make it).
local function oldest()
  while true do
    local first = redis.call('ZRANGE', QUEUE, '0', '0')[1]
    if not first then
      return nil
    end
    local v = redis.call('HGET', REQ, first)
    local exp, ttl, proc, cost, cls = waiting(v)
    if exp and exp >= now then
      return first, ttl, proc, cost, cls
    end
    redis.call('ZREM', QUEUE, first)
    if cls then
      fair().unqueue_class(first, cls)
    end
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
-- request (part: its class's part of the lease, nil for a plain
-- waiter) and tells its process, unless silent (the call answers it).
-- PUBLISH, which an ACL can deny, goes
-- through pcall: nothing after the change may fail the script (a
-- script that applied its change and then raised an error would report
-- a failure for a change made, and its retry the wrong outcome). The
-- waiter finds the grant at its next re-check then.
local function hand(r, request, ttl, proc, paid, part, silent)
  redis.call('ZREM', QUEUE, request)
  local token = grant(r, request, ttl, paid, part)
  if not silent then
    tell(proc, request .. ' ' .. token .. ' ' .. r.id)
  end
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
    local best = redis.call('ZRANGE', AVAIL, '0', '0')[1]
    if best then
      return load(listed_id(best)), best
    end
    return nil, nil
  end
  local soonest = nil
  local from = 0
  while true do
    local page = redis.call('ZRANGE', AVAIL, num(from), num(from + SCAN_DEPTH - 1))
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
-- the waiter is told to look again, and its re-check learns when. In a
-- fair pool (its oldest waiter in a class), fair.lua's order serves
-- instead.
local function serve(quiet)
  freed = false
  while true do
    local request, ttl, proc, cost, cls = oldest()
    if not request then
      return
    end
    if cls then
      return fair().serve(quiet)
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
