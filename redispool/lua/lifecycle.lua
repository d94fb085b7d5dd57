-- Part of the pool's helpers (see scripts.go): resources added,
-- removed and reconfigured.

-- parse_limits reads a resource's limits as the client sends them,
-- 'NAME,MAX,PER[/a];...' with NAME in hex, PER in ms and /a for a limit
-- counted at admission: buckets without a level, or nil for none.
local function parse_limits(v)
  if not v or v == '' then
    return nil
  end
  local bs = {}
  for n, m, p, a in string.gmatch(v, '(%x+),(%d+),(%d+)(/?a?)') do
    bs[#bs + 1] = { n = n, m = tonumber(m), p = tonumber(p), born = 0, adm = a == '/a' }
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
    out[i] = b.n .. ',' .. num(b.m) .. ',' .. num(b.p) .. (b.adm and '/a' or '')
  end
  return table.concat(out, ';')
end

-- tally adds d to the count in field of PROFILES, which goes at 0, and
-- returns the count.
local function tally(field, d)
  local n = tonumber(redis.call('HINCRBY', PROFILES, field, d))
  if n <= 0 then
    redis.call('HDEL', PROFILES, field)
  end
  return n
end

-- count_profile adds d ('1' or '-1') to the resources, draining ones
-- aside, whose limits are text (limits_of), so that exceeds reads the
-- pool's distinct limits instead of every resource; and, when those
-- limits come or go, d to the count of each of their names ('#' ..
-- NAME: how many of the pool's distinct limits have it), so that
-- acquire checks a cost's names without reading them all (unknown).
local function count_profile(text, d)
  local n = tally(text, d)
  if (d == '1' and n == 1) or (d == '-1' and n <= 0) then
    for _, b in ipairs(parse_limits(text) or {}) do
      tally('#' .. b.n, d)
    end
  end
end

-- HASH_TABLE is the value of the field '#h' of RES and REQ, written
-- with the pool's first resource. Redis keeps a small hash (up to
-- hash-max-listpack-entries fields, 128 by default) as a list that
-- every lookup scans, which at a few dozen resources costs more than
-- the rest of the lookup. A value longer than hash-max-listpack-value
-- (64 bytes by default) makes it a hash table for as long as it exists.
local HASH_TABLE = 'keeps this hash a hash table: a value longer than hash-max-listpack-value'

-- add_resource puts a new resource in the pool, available at once.
local function add_resource(id, prio, cap, limits)
  local r = { id = id, c = tonumber(cap), h = 0, s = 0, p = prio, q = 0, e = 0, a = 0 }
  if limits then
    r.t, r.b = now, limits
    for _, b in ipairs(r.b) do
      b.u, b.r = b.m, 0
    end
    redis.call('HINCRBY', RES, '#b', '1')
  end
  count_profile(limits_of(r), '1')
  unsynced()
  store(r)
  if redis.call('HINCRBY', RES, '#n', '1') == 1 then
    redis.call('HSET', RES, '#h', HASH_TABLE)
    redis.call('HSET', REQ, '#h', HASH_TABLE)
  end
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
  redis.call('HINCRBY', RES, '#n', '-1')
  count_profile(limits_of(r), '-1')
  dropped = true
  if r.x then
    redis.call('HINCRBY', RES, '#x', '-1')
  end
  if r.s > 0 or r.q > 0 then
    redis.call('ZREM', SUSP, r.id)
  end
  if r.e > 0 then
    redis.call('HINCRBY', RES, '#j', '-1')
  end
  if r.q > 0 then
    redis.call('HINCRBY', RES, '#l', '-1')
  end
  r.x, r.s, r.q, r.e = false, 0, 0, 0
  if r.h == 0 then
    drop(r)
    return
  end
  r.d = true
  unsynced()
  store(r)
  redis.call('HINCRBY', RES, '#d', '1')
end

-- retune gives r the buckets of limits (nil: none), as the core's
-- Update does: a bucket whose name stays keeps its level, brought up to
-- now and cut to its new MAX (to a whole unit, rounding down, if its
-- PER changes), so a larger MAX is reached by refilling, and stays held
-- (admitted) while still counted at admission; a new one starts full; a
-- dropped one goes.
local function retune(r, limits)
  if r.b then
    refill(r)
  end
  if (r.b ~= nil) ~= (limits ~= nil) then
    redis.call('HINCRBY', RES, '#b', limits and '1' or '-1')
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
      b.h = o and o.h and b.adm or false
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
  unsynced()
  if r.d then
    r.d = false
    redis.call('HINCRBY', RES, '#d', '-1')
    redis.call('HINCRBY', RES, '#n', '1')
    count_profile(limits_of(r), '1')
  end
  r.p = prio
  if cap then
    r.c = tonumber(cap)
    local was = limits_of(r)
    if limits ~= was then
      retune(r, parse_limits(limits))
      count_profile(was, '-1')
      count_profile(limits_of(r), '1')
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
