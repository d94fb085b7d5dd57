-- release: end the lease ARGV[2], a success (see health). Reply: {OK}, or {NONE} when the pool
-- does not have it (expired, or lost with the server's data).
local owner = redis.call('HGET', OWNER, ARGV[2])
if not owner then
  return repeated()
end
end_lease(ARGV[2], 0, owner, 'ok')
return { OK }
