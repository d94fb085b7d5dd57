-- include: end the exclusion or suspension of resource ARGV[2].
-- Reply: {OK}, {NOT_FOUND}; when it is neither, {NOT_INACTIVE} if it has
-- no lease and {NOT_EXCLUDED} if it has, as the core tells an idle
-- resource from a held one.
local r = load(ARGV[2])
if not r or r.d then
  return { NOT_FOUND }
end
if not r.x and not r.s then
  if r.h == 0 then
    return { NOT_INACTIVE }
  end
  return { NOT_EXCLUDED }
end
if r.x then
  r.x = nil
  redis.call('HDEL', RES, 'x:' .. r.id)
  redis.call('HINCRBY', RES, '#x', -1)
end
if r.s then
  r.s = nil
  redis.call('HDEL', RES, 's:' .. r.id)
  redis.call('ZREM', SUSP, r.id)
end
relist(r, nil)
if eligible(r) then
  freed = freed + (r.c - r.h)
end
return { OK }
