-- suspend: keep resource ARGV[2] out of the pool for ARGV[3] ms, or
-- until a later end it already has. Its leases run on; it stays out once
-- they end. Reply: {OK}, {NOT_FOUND}, or {NOT_ACTIVE} when excluded
-- (Include ends both, so suspending it would mean nothing).
local r = load(ARGV[2])
if not r or r.d then
  return { NOT_FOUND }
end
if r.x then
  return { NOT_ACTIVE }
end
local old = listing(r)
suspend(r, now + tonumber(ARGV[3]))
store(r)
relist(r, old)
return { OK }
