-- include: end the exclusion or suspension (or ejection) of resource
-- ARGV[2], and its failures in a row; it may rest for its buckets then.
-- Reply: {OK}, {NOT_FOUND}; when it is neither, {NOT_INACTIVE} if it is
-- idle and listed, {NOT_EXCLUDED} if it has a lease or rests for its
-- buckets, as the core tells them apart.
local r = load(ARGV[2])
if not r or r.d then
  return { NOT_FOUND }
end
if not r.x and r.s == 0 then
  if r.h == 0 and r.q == 0 then
    return { NOT_INACTIVE }
  end
  return { NOT_EXCLUDED }
end
if r.x then
  r.x = false
  redis.call('HINCRBY', RES, '#x', '-1')
end
if r.s > 0 then
  unsuspend(r)
  resched(r)
end
r.f = r.f and 0
if r.b then
  refill(r)
  set_rest(r, budget_rest(r))
end
store(r)
relist(r, nil)
return { OK }
