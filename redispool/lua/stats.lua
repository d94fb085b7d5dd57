-- stats: {OK, resources, available, excluded, suspended, draining,
-- leases, expired leases, resting for their buckets, waits the limits
-- caused, queued waiters, then for each class of waiters (fair.lua)
-- its cid, waiters, grants and usage}, after reclaim, so that it counts only leases
-- that are still running, and of a pool that reclaim emptied, nothing,
-- once the slots that reclaim freed went to the waiters.
if freed then
  serve()
end
tidy()
local c = redis.call('HMGET', RES, '#n', '#x', '#d', '#e', '#l', '#w')
local reply = {
  OK,
  tonumber(c[1]) or 0,
  redis.call('ZCARD', AVAIL),
  tonumber(c[2]) or 0,
  redis.call('ZCARD', SUSP),
  tonumber(c[3]) or 0,
  redis.call('ZCARD', LEASES),
  tonumber(c[4]) or 0,
  tonumber(c[5]) or 0,
  tonumber(c[6]) or 0,
  redis.call('ZCARD', QUEUE),
}
if redis.call('EXISTS', FAIR) == 1 then
  for _, v in ipairs(fair().class_stats()) do
    reply[#reply + 1] = v
  end
end
return reply
