-- cooldown: end the lease ARGV[2] and suspend its resource for ARGV[3] ms
-- in the same step, so that no one can take it in between.
-- Reply: {OK} or {NONE} as release.
local owner = redis.call('HGET', OWNER, ARGV[2])
if not owner then
  return repeated()
end
end_lease(ARGV[2], tonumber(ARGV[3]), owner, 'cooled')
return { OK }
