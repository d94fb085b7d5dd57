-- update: set the priority of resource ARGV[2] to ARGV[3].
-- Reply: {OK} or {NOT_FOUND}.
local r = load(ARGV[2])
if not r or r.d then
  return { NOT_FOUND }
end
redis.call('HSET', RES, 'p:' .. r.id, ARGV[3])
local member = listing(r)
if member then
  redis.call('ZADD', AVAIL, ARGV[3], member)
end
return { OK }
