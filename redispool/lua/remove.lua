-- remove: delete resource ARGV[2]. One with leases drains: it is gone
-- for every operation but the end of those leases, and leaves with the
-- last one. Reply: {OK} or {NOT_FOUND}.
local r = load(ARGV[2])
if not r or r.d then
  return { NOT_FOUND }
end
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
return { OK }
