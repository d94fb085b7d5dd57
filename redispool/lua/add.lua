-- add: resource ARGV[2] with priority ARGV[3] and capacity ARGV[4].
-- Reply: {OK}, {DUPLICATE}, or {DRAINING} when the id belongs to a
-- resource removed while leased.
local r = load(ARGV[2])
if r then
  if r.d then
    return { DRAINING }
  end
  return { DUPLICATE }
end
redis.call('HSET', RES, 'c:' .. ARGV[2], ARGV[4], 'p:' .. ARGV[2], ARGV[3])
redis.call('HINCRBY', RES, '#n', 1)
r = load(ARGV[2])
relist(r, nil)
freed = freed + r.c
return { OK }
