-- abandon: give back the lease that acquire request ARGV[2] got, if any:
-- the client lost the reply (its context ended, or the connection
-- broke), so no one knows the lease. Its own request is the acquire
-- request: the status that the epilogue records for it also tells an
-- acquire of that request still on its way (sent before, arriving
-- after) to take nothing. Reply: {OK}.
local token = redis.call('HGET', REQ, ARGV[2])
if token then
  end_lease(token, 0)
end
return { OK }
