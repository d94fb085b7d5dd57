-- observe: lower the bucket named ARGV[3] of lease ARGV[2]'s resource to
-- what the provider reports: ARGV[4] units left now, and its own bucket
-- full again in ARGV[5] ms (ignored when longer than the bucket's PER:
-- the report describes another window). The bucket is never raised.
-- Reply: {OK}, {NONE} as release, or {UNKNOWN_LIMIT} when the resource
-- has no bucket of that name.
local owner = redis.call('HGET', OWNER, ARGV[2])
if not owner then
  return { NONE }
end
local _, id = split_owner(owner)
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
refill(r)
local left, reset, full = tonumber(ARGV[4]), tonumber(ARGV[5]), b.m * b.p
local bound = full
if left < b.m then
  bound = left * b.p
end
if reset <= b.p then
  bound = math.min(bound, full - reset * b.m)
end
if bound < b.l then
  b.l = bound
  local old = listing(r)
  set_rest(r, budget_rest(r))
  store(r)
  relist(r, old)
end
return { OK }
