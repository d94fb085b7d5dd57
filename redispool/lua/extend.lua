-- extend: move the deadline of lease ARGV[2] to ARGV[3] ms from now.
-- Reply: {OK} or {NONE} as release.
if not redis.call('ZSCORE', LEASES, ARGV[2]) then
  return { NONE }
end
redis.call('ZADD', LEASES, num(now + tonumber(ARGV[3])), ARGV[2])
return { OK }
