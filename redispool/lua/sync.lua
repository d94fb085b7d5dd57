-- sync: make the pool's resources exactly those of ARGV[3 .. #ARGV-3],
-- quadruples of ID, priority, capacity and limits (the client checked
-- them, and that no ID repeats): add the missing ones, configure the
-- changed ones (a draining one is back, its leases running on; changed
-- limits are retuned, their levels kept), remove the others (one with
-- leases drains, as with remove). Exclusions and suspensions are left
-- as they are. ARGV[2] is the client's digest of those resources, kept
-- in '#s' until something changes them (unsynced), so that the same
-- Sync again need not be sent (synced). Reply: {OK}.
local want = {}
for i = 3, #ARGV - 3, 4 do
  local id, prio, cap, limits = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  want[id] = true
  local r = load(id)
  if not r then
    add_resource(id, prio, cap, parse_limits(limits))
  elseif r.d or r.p ~= prio or r.c ~= tonumber(cap) or limits_of(r) ~= limits then
    configure(r, prio, cap, limits)
  end
end
for _, field in ipairs(redis.call('HKEYS', RES)) do
  if string.byte(field, 1) == 114 then -- 'r'
    local id = string.sub(field, 2)
    if not want[id] then
      local r = load(id)
      if not r.d then
        remove_resource(r)
      end
    end
  end
end
if next(want) then -- an emptied pool keeps no keys (tidy)
  redis.call('HSET', RES, '#s', ARGV[2])
end
return { OK }
