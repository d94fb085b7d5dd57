-- remaining: the units left now in each bucket of resource ARGV[2]
-- (negative: in debt). Reply: {OK, name, units, ...} with names in hex,
-- or {NOT_FOUND}.
local r = load(ARGV[2])
if not r or r.d then
  return { NOT_FOUND }
end
local out = { OK }
if r.b then
  refill(r)
  for _, b in ipairs(r.b) do
    out[#out + 1] = b.n
    out[#out + 1] = b.u
  end
end
return out
