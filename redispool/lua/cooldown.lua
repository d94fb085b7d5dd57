-- cooldown: end the lease ARGV[2] and suspend its resource for ARGV[3] ms
-- in the same step, so that no one can take it in between.
-- Reply: {OK} or {NONE} as release.
if redis.call('ZREM', LEASES, ARGV[2]) == 0 then
  return repeated()
end
end_lease(ARGV[2], tonumber(ARGV[3]), 'cooled')
return { OK }
