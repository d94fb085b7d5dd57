-- add: resource ARGV[2] with priority ARGV[3], capacity ARGV[4] and
-- limits ARGV[5] (see parse_limits), its buckets full.
-- Reply: {OK}, {DUPLICATE}, or {DRAINING} when the id belongs to a
-- resource removed while leased.
local r = load(ARGV[2])
if r then
  if r.d then
    return { DRAINING }
  end
  return { DUPLICATE }
end
add_resource(ARGV[2], ARGV[3], ARGV[4], parse_limits(ARGV[5]))
return { OK }
