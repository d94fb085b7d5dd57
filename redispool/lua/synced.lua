-- synced: {OK} when the last Sync was of the resources of digest ARGV[2]
-- and nothing has changed them since, so that the same Sync again
-- would change nothing; {NONE} otherwise.
if redis.call('HGET', RES, '#s') == ARGV[2] then
  return { OK }
end
return { NONE }
