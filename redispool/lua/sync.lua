-- sync: make the pool's resources exactly those of ARGV[2 .. #ARGV-3],
-- triples of ID, priority and capacity (the client checked them, and
-- that no ID repeats): add the missing ones, configure the changed ones
-- (a draining one is back, its leases running on), remove the others
-- (one with leases drains, as with remove). Exclusions and suspensions
-- are left as they are. Reply: {OK}.
local want = {}
for i = 2, #ARGV - 3, 3 do
  local id, prio, cap = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  want[id] = true
  local r = load(id)
  if not r then
    add_resource(id, prio, cap)
  elseif r.d or r.p ~= prio or r.c ~= tonumber(cap) then
    configure(r, prio, cap)
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
return { OK }
