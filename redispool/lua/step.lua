-- Part of the pool's helpers (see scripts.go): what every call does
-- first and last (begin, reclaim, tidy) and the reply's next event.

-- reclaim applies what the passage of time decided since the last
-- script: leases past their deadline end (this is what makes a crashed
-- holder's leases come back, with no process doing anything), and
-- suspensions that are over end.
local function reclaim()
  local due = redis.call('ZRANGEBYSCORE', LEASES, '-inf', now_text)
  if #due > 0 then
    redis.call('ZREMRANGEBYSCORE', LEASES, '-inf', now_text)
    redis.call('HINCRBY', RES, '#e', num(#due))
  end
  for _, lease in ipairs(due) do
    end_lease(lease, 0, 'expired')
  end
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', SUSP, '-inf', now_text)) do
    redis.call('ZREM', SUSP, id)
    local r = load(id)
    if r then
      unsuspend(r)
      if r.q > 0 then
        refill(r)
        local q = budget_rest(r)
        if q == 0 then
          redis.call('HINCRBY', RES, '#l', '-1')
        else
          redis.call('ZADD', SUSP, num(q), id)
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
    local first = redis.call('ZRANGE', key, '0', '0', 'WITHSCORES')
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
-- has resources with buckets (without, it is next_event). in_class:
-- the pool is fair, and fair_event (fair.lua) answers.
local function waiter_event(budgets, in_class)
  local at = next_event()
  if in_class then
    return fair().fair_event(at, budgets)
  end
  local first = budgets and redis.call('ZRANGE', QUEUE, '0', '0')[1]
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
-- reads the pool's distinct limits (count_profile), not its resources,
-- and runs only for a cost that no listed resource covers.
local function exceeds(cost)
  local any = false
  for _, text in ipairs(redis.call('HKEYS', PROFILES)) do
    if string.byte(text, 1) ~= 35 then -- not a name's count ('#')
      local limits = parse_limits(text)
      if not limits then
        return false -- a resource without limits covers any cost
      end
      local never = false
      for _, b in ipairs(limits) do
        if of(cost, b.n) > b.m then
          never = true
          break
        end
      end
      if not never then
        return false
      end
      any = true
    end
  end
  return any
end

-- recount sets the counts of the limit names (count_profile) from the
-- pool's distinct limits, and returns them by name: a pool that an
-- earlier version kept has none.
local function recount()
  local all = redis.call('HGETALL', PROFILES)
  local had, want = {}, {}
  for i = 1, #all, 2 do
    local field = all[i]
    if string.byte(field, 1) == 35 then -- '#'
      had[string.sub(field, 2)] = all[i + 1]
    else
      for _, b in ipairs(parse_limits(field) or {}) do
        want[b.n] = (want[b.n] or 0) + 1
      end
    end
  end
  for n, _ in pairs(had) do
    if not want[n] then
      redis.call('HDEL', PROFILES, '#' .. n)
    end
  end
  for n, c in pairs(want) do
    if had[n] ~= num(c) then
      redis.call('HSET', PROFILES, '#' .. n, num(c))
    end
  end
  return want
end

-- unknown is the first name of costv (the client's, in sorted order)
-- that no resource of the pool has a limit for, draining ones aside, or
-- nil. It reads the names' counts (count_profile), and only when one is
-- missing the pool's distinct limits (recount).
local function unknown(costv)
  local names, fields = {}, {}
  for n in string.gmatch(costv, '(%x+)=%d+') do
    names[#names + 1], fields[#fields + 1] = n, '#' .. n
  end
  local counts = redis.call('HMGET', PROFILES, unpack(fields))
  for i = 1, #names do
    if not counts[i] then
      local known = recount()
      for _, n in ipairs(names) do
        if not known[n] then
          return n
        end
      end
      return nil
    end
  end
  return nil
end

-- tidy empties the queue of a pool left with no resource (draining
-- ones serve no waiter): each waiter leaves it and is told to look
-- again (a message of its request alone), so that it finds the pool
-- empty at once, not at its next re-check. Once nothing drains either,
-- it deletes every key of the pool but TOKEN and the records of
-- requests (which expire by themselves).
local function tidy()
  if not dropped then
    return
  end
  dropped = false
  local n = redis.call('HMGET', RES, '#n', '#d')
  if (tonumber(n[1]) or 0) > 0 then
    return
  end
  for _, request in ipairs(redis.call('ZRANGE', QUEUE, '0', '-1')) do
    local _, _, proc = waiting(redis.call('HGET', REQ, request))
    if proc then
      redis.call('HDEL', REQ, request)
      tell(proc, request)
    end
  end
  redis.call('DEL', QUEUE)
  -- The waiters' records of a fair pool (see fair.lua); the tenants'
  -- and classes' stay.
  for _, kind in ipairs({ 'm', 'r', 'w' }) do
    redis.call('ZREMRANGEBYLEX', FAIR, '[' .. kind, '(' .. string.char(string.byte(kind) + 1))
  end
  if (tonumber(n[2]) or 0) == 0 then
    redis.call('DEL', RES, AVAIL, LEASES, SUSP, REQ, PROFILES)
  end
end

-- begin sets up a call with its keys and arguments, and applies what
-- time decided since the last one.
local function begin(keys, argv)
  KEYS, ARGV = keys, argv
  RES, AVAIL, LEASES, SUSP, REQ = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
  TOKEN, QUEUE, PROFILES, FAIR, DONE = KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
  WAKE = ARGV[1]
  REQUEST, WINDOW, RECORD = ARGV[#ARGV - 2], ARGV[#ARGV - 1], ARGV[#ARGV] == '1'
  local clock = redis.call('TIME')
  local usec = string.rep('0', 6 - #clock[2]) .. clock[2]
  now_us_text = clock[1] .. usec
  now_text = clock[1] .. string.sub(usec, 1, 3)
  now = tonumber(now_text)
  freed, dropped, wake_err, EJECT = false, false, 0, nil
  reclaim()
end
