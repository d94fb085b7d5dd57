-- abandon: the client gives up acquire request ARGV[2]: its reply was
-- lost (its context ended, or the connection broke), or its waiter
-- left. The request leaves the queue, and the lease it got, if any, is
-- given back (to the next waiter, if there is one). Its own request is
-- the acquire request: the status that the epilogue records for it
-- also tells an acquire of that request still on its way (sent before,
-- arriving after) to take nothing. Reply: {OK}.
local v = redis.call('HGET', REQ, ARGV[2])
if waiting(v) then
  unqueue(ARGV[2], select(5, waiting(v)))
  redis.call('HDEL', REQ, ARGV[2])
  freed = true -- the waiters behind it may wait for it alone (serve)
elseif v then
  local token, id = split_entry(v)
  local lease = lease_member(token, ARGV[2], id)
  if redis.call('ZREM', LEASES, lease) == 1 then
    end_lease(lease, 0, 'abandoned')
  end
end
return { OK }
