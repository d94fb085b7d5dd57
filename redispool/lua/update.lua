-- update: set the priority of resource ARGV[2] to ARGV[3].
-- Reply: {OK} or {NOT_FOUND}.
local r = load(ARGV[2])
if not r or r.d then
  return { NOT_FOUND }
end
configure(r, ARGV[3], nil)
return { OK }
