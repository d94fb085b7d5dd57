-- observe: lower the bucket named ARGV[3] of lease ARGV[2]'s resource to
-- what the provider reports: ARGV[4] units left now (-1: not reported),
-- and its own bucket full again in ARGV[5] ms (ignored when longer than
-- the bucket's PER: the report describes another window). The level is
-- never raised. ARGV[6], when above 0 and other than the bucket's MAX,
-- is the provider's limit: it becomes MAX, PER kept, the level cut to it.
-- Either is an answer: the resource's held buckets refill from now
-- (admitted).
-- Reply: {OK}, {NONE} as release, or {UNKNOWN_LIMIT} when the resource
-- has no bucket of that name.
if not redis.call('ZSCORE', LEASES, ARGV[2]) then
  return { NONE }
end
local _, _, id = split_lease(ARGV[2])
local r = load(id)
local b = nil
for _, x in ipairs(r and r.b or {}) do
  if x.n == ARGV[3] then
    b = x
  end
end
if not b then
  return { UNKNOWN_LIMIT }
end
local changed = admitted(r)
local left, reset, limit = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6] or 0)
if limit > 0 and limit ~= b.m then
  -- The resource's limits are its profile (count_profile): it moves.
  local was = limits_of(r)
  b.m, changed = limit, true
  if b.u >= limit then
    b.u, b.r = limit, 0
  end
  if not r.d then
    count_profile(was, '-1')
    count_profile(limits_of(r), '1')
  end
end
-- The bound, as whole units and a remainder: left units, and the level
-- that refills to full in reset ms (the gain of PER - reset ms from 0).
local u, rem = b.m, 0
if left >= 0 and left < b.m then
  u = left
end
if reset <= b.p then
  local gu, grem = gain(b, b.p - reset, 0)
  if gu < u or (gu == u and grem < rem) then
    u, rem = gu, grem
  end
end
if u < b.u or (u == b.u and rem < b.r) then
  b.u, b.r, changed = u, rem, true
end
if changed then
  local old = listing(r)
  set_rest(r, budget_rest(r))
  store(r)
  relist(r, old)
end
return { OK }
