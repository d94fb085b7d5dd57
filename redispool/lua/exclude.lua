-- exclude: keep resource ARGV[2] out of the pool until Include. Its
-- leases run on. A suspension (an ejection too) ends here, and a rest
-- for its buckets: Include would end the first and works the other out
-- again.
-- Reply: {OK}, {NOT_FOUND}, or {NOT_ACTIVE} when already excluded.
local r = load(ARGV[2])
if not r or r.d then
  return { NOT_FOUND }
end
if r.x then
  return { NOT_ACTIVE }
end
local old = listing(r)
r.x = true
redis.call('HINCRBY', RES, '#x', '1')
if r.s > 0 or r.q > 0 then
  unsuspend(r)
  set_rest(r, 0)
  resched(r)
end
store(r)
relist(r, old)
return { OK }
