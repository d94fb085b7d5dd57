-- release: end the lease ARGV[2] (its member in LEASES), a success (see
-- health). Reply: {OK}, or {NONE} when the pool does not have it
-- (expired, or lost with the server's data).
if redis.call('ZREM', LEASES, ARGV[2]) == 0 then
  return repeated()
end
end_lease(ARGV[2], 0, 'ok')
return { OK }
