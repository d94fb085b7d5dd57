-- exclude: keep resource ARGV[2] out of the pool until Include. Its
-- leases run on. A suspension ends here: Include would end it anyway.
-- Reply: {OK}, {NOT_FOUND}, or {NOT_ACTIVE} when already excluded.
local r = load(ARGV[2])
if not r or r.d then
  return { NOT_FOUND }
end
if r.x then
  return { NOT_ACTIVE }
end
local old = listing(r)
r.x = '1'
redis.call('HSET', RES, 'x:' .. r.id, 1)
redis.call('HINCRBY', RES, '#x', 1)
if r.s then
  r.s = nil
  redis.call('HDEL', RES, 's:' .. r.id)
  redis.call('ZREM', SUSP, r.id)
end
relist(r, old)
return { OK }
