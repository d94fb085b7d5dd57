-- remove: delete resource ARGV[2]. One with leases drains: it is gone
-- for every operation but the end of those leases, and leaves with the
-- last one. Reply: {OK} or {NOT_FOUND}.
local r = load(ARGV[2])
if not r or r.d then
  return { NOT_FOUND }
end
remove_resource(r)
return { OK }
