-- Part of the pool's helpers (see scripts.go): the buckets of
-- Resource.Limits, exact in integers below 2^53.

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
-- nothing until it passes it, so no span is counted twice. A held
-- bucket (see admitted) gains nothing.
local function refill(r)
  local dt = now - r.t
  if dt <= 0 then
    return
  end
  r.t = now
  for _, b in ipairs(r.b) do
    if b.u < b.m and not b.h then
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

-- until_each is when every bucket of r (refilled) holds a unit, or, if
-- full, its MAX: 0 if each does now.
local function until_each(r, full)
  local at = 0
  if r.b then
    for _, b in ipairs(r.b) do
      local want = full and b.m or 1
      if b.u < want then
        at = math.max(at, now + wait_units(b, want))
      end
    end
    if at > 0 then
      at = at + math.max(r.t - now, 0)
    end
  end
  return at
end

-- budget_rest is until when r must rest for its buckets (refilled):
-- until each holds a unit (and so is out of debt), or 0 if each does.
-- A resource in AVAIL therefore covers the default cost, 1 of each, so
-- a call without a cost never scans.
local function budget_rest(r)
  return until_each(r, false)
end

-- full_at is when r's buckets (refilled) are all full again, or 0 if
-- they are: the later, the less budget r has left.
local function full_at(r)
  return until_each(r, true)
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
    redis.call('HINCRBY', RES, '#l', q > 0 and '1' or '-1')
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
    if b.adm and c > 0 and b.u >= b.m then
      b.h = true -- the provider's bucket starts refilling when it admits the call
    end
    b.u = b.u - c
    paid[i] = b.n .. '=' .. num(c)
  end
  set_rest(r, budget_rest(r))
  return table.concat(paid, ',')
end

-- admitted tells r's buckets that an answer came from the provider
-- now: it has admitted a call since a bucket counted at admission
-- (config.Limit.Admission) was taken from full, and so refills its own
-- from now at the latest. Such a bucket, held since (refill), refills
-- from now, so that it never refills ahead of the provider's. It
-- returns whether a bucket was held.
local function admitted(r)
  refill(r)
  local any = false
  for _, b in ipairs(r.b) do
    any = any or b.h
    b.h = false
  end
  return any
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
