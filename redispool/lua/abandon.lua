-- abandon: give back the lease that request ARGV[2] got, if any: the
-- client lost the reply (its context ended, or the connection broke),
-- so no one knows the lease. Reply: {OK}.
local token = redis.call('HGET', REQ, ARGV[2])
if token then
  end_lease(token, 0)
end
return { OK }
