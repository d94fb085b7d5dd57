-- fail: end the lease ARGV[2], a failure of its resource (see health),
-- with the pool's ejection ARGV[3 .. 6]: failures in a row that eject
-- (0: ejection off), base and longest ejection (ms), largest share
-- ejected. Reply: {OK} or {NONE} as release.
if redis.call('ZREM', LEASES, ARGV[2]) == 0 then
  return repeated()
end
if tonumber(ARGV[3]) > 0 then
  EJECT = { n = tonumber(ARGV[3]), base = tonumber(ARGV[4]), max = tonumber(ARGV[5]), share = tonumber(ARGV[6]) }
end
end_lease(ARGV[2], 0, 'fail')
return { OK }
