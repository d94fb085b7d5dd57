-- stats: {OK, resources, available, excluded, suspended, draining,
-- leases, expired leases}, after reclaim, so that it counts only leases
-- that are still running, and of a pool that reclaim emptied, nothing,
-- once the slots that reclaim freed went to the waiters.
if freed then
  serve()
end
tidy()
local c = redis.call('HMGET', RES, '#n', '#x', '#d', '#e')
return {
  OK,
  tonumber(c[1]) or 0,
  redis.call('ZCARD', AVAIL),
  tonumber(c[2]) or 0,
  redis.call('ZCARD', SUSP),
  tonumber(c[3]) or 0,
  redis.call('ZCARD', LEASES),
  tonumber(c[4]) or 0,
}
