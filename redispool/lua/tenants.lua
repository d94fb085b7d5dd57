-- tenants: make the pool's tenants exactly those of ARGV[2 .. #ARGV-3],
-- triples of name (hex), weight and limits (as a resource's; the client
-- checked them, and that no name repeats): a bucket whose name and PER
-- stay keeps its level, cut to its new MAX; a new one starts full. A
-- tenant left out has weight 1 and no limits again. Reply: {OK}.
local f = fair()
local want = {}
for i = 2, #ARGV - 3, 3 do
  local th, limits = ARGV[i], parse_limits(ARGV[i + 2])
  want[th] = true
  local old = f.load_tenant(th)
  local t = { th = th, w = tonumber(ARGV[i + 1]) }
  if limits then
    local prev = {}
    if old.b then
      refill(old)
      for _, b in ipairs(old.b) do
        prev[b.n] = b
      end
    end
    for _, b in ipairs(limits) do
      local o = prev[b.n]
      b.u, b.r = b.m, 0
      if o and o.u < b.m then
        b.u = o.u
        if o.p == b.p then
          b.r = o.r
        end
      end
    end
    t.b, t.t = limits, now
  end
  f.put('t' .. th, f.tenant_text(t))
  f.tenants[th] = t -- what serve reads after this (load_tenant's cache)
end
for _, m in ipairs(redis.call('ZRANGEBYLEX', FAIR, '[t', '(u')) do
  local th = string.match(m, '^t(%x*) ')
  if not want[th] then
    redis.call('ZREM', FAIR, m)
    f.tenants[th] = nil
  end
end
freed = true -- a waiter held back by its tenant's limits may go now
return { OK }
