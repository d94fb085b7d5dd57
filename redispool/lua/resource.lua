-- Part of the pool's helpers (after prelude.lua; see scripts.go): a
-- resource's packed field, and its listing in AVAIL and SUSP.

-- The fields that may follow a resource's priority, each a letter and
-- its value (none for a resource without limits or a health record, so
-- that such a resource costs nothing more to load and store):
--   t MS                   when its buckets were last brought up to date
--   b NAME,MAX,PER,UNITS[+REM][,BORN][/a|/h]
--                          a bucket (Resource.Limits): NAME in hex, MAX
--                          units, PER ms; it holds UNITS whole units
--                          (negative: in debt) and REM (0 when absent,
--                          below PER) of 1/PER more, and gains MAX units
--                          per PER, up to MAX units. BORN: the last token
--                          granted when Sync added it to a resource that
--                          had leases (none: 0), so that Settle leaves it
--                          to leases granted since. /a: counted at the
--                          provider's admission (config.Limit.Admission);
--                          /h: so, and held, gaining nothing until the
--                          next answer (see admitted)
--   q MS                   resting until then for its buckets, 0: not
--   f FAILS,EJECTIONS      failures in a row and ejections so far
--   e MS                   ejected until then (the suspension holds it)
--   a MS                   when its buckets are all full again, as its
--                          listing in AVAIL has it (see full_at)
-- Fields of other letters are kept as they are.

-- MIN_UNITS is the deepest debt a bucket records, in units.
local MIN_UNITS = -2 ^ 51

-- LONGEST_WAIT (ms) bounds a rest for the buckets: one that long lasts,
-- in effect, until Sync or Include.
local LONGEST_WAIT = 2 ^ 52

-- parse_ext reads the fields after r's priority into r.
local function parse_ext(r, rest)
  for tag, v in string.gmatch(rest, ' (%a)(%S*)') do
    if tag == 'b' then
      local level, flag = string.match(v, '^(.*)/([ah])$')
      if not level then
        level, flag = v, ''
      end
      local n, m, p, u, rem, born = string.match(level, '^(%x+),(%d+),(%d+),(%-?%d+)%+?(%d*),?(%d*)$')
      r.b = r.b or {}
      r.b[#r.b + 1] = { n = n, m = tonumber(m), p = tonumber(p), u = tonumber(u), r = tonumber(rem) or 0, born = tonumber(born) or 0,
        adm = flag ~= '', h = flag == 'h' }
    elseif tag == 't' then
      r.t = tonumber(v)
    elseif tag == 'q' then
      r.q = tonumber(v)
    elseif tag == 'f' then
      local f, j = string.match(v, '^(%d+),(%d+)$')
      r.f, r.j = tonumber(f), tonumber(j)
    elseif tag == 'e' then
      r.e = tonumber(v)
    elseif tag == 'a' then
      r.a = tonumber(v)
    else
      r.keep = (r.keep or '') .. ' ' .. tag .. v
    end
  end
end

-- load reads resource id, or nil.
local function load(id)
  local v = redis.call('HGET', RES, 'r' .. id)
  if not v then
    return nil
  end
  local c, h, f, s, p, rest = string.match(v, '^(%d+) (%d+) (%S) (%d+) (%S+)(.*)$')
  local r = { id = id, c = tonumber(c), h = tonumber(h), x = f == 'x', d = f == 'd', s = tonumber(s), p = p, q = 0, e = 0, a = 0 }
  if rest ~= '' then
    parse_ext(r, rest)
  end
  return r
end

-- ext is the text of r's fields after its priority.
local function ext(r)
  local out = ''
  if r.b then
    out = ' t' .. num(r.t or now)
    for _, b in ipairs(r.b) do
      out = out .. ' b' .. b.n .. ',' .. num(b.m) .. ',' .. num(b.p) .. ',' .. num(b.u)
      if b.r > 0 then
        out = out .. '+' .. num(b.r)
      end
      if b.born > 0 then
        out = out .. ',' .. num(b.born)
      end
      if b.adm then
        out = out .. (b.h and '/h' or '/a')
      end
    end
  end
  if r.q > 0 then
    out = out .. ' q' .. num(r.q)
  end
  if (r.f or 0) > 0 or (r.j or 0) > 0 then
    out = out .. ' f' .. num(r.f or 0) .. ',' .. num(r.j or 0)
  end
  if r.e > 0 then
    out = out .. ' e' .. num(r.e)
  end
  if r.a > 0 then
    out = out .. ' a' .. num(r.a)
  end
  return out .. (r.keep or '')
end

-- store writes r back.
local function store(r)
  local f = (r.x and 'x') or (r.d and 'd') or '-'
  redis.call('HSET', RES, 'r' .. r.id, string.format('%d %d %s %d %s', r.c, r.h, f, r.s, r.p) .. ext(r))
end

local function eligible(r)
  return not r.x and r.s == 0 and r.q == 0 and not r.d and r.h < r.c
end

-- listing is r's member in AVAIL, or nil when r is not leasable. The ID
-- is concatenated, not formatted: Lua 5.1's '%s' stops at a NUL byte in
-- strings under 100 bytes, which would list a resource under another ID.
local function listing(r)
  if eligible(r) then
    return string.format('%014d%010d', r.a, r.h) .. ':' .. r.id
  end
  return nil
end

-- listed_id is the ID of a member of AVAIL.
local function listed_id(m)
  return string.sub(m, 26)
end

-- relist moves r in AVAIL from old (its listing before the change) to
-- where it belongs now, and notes a slot that became leasable.
local function relist(r, old)
  local new = listing(r)
  if old == new then
    return
  end
  if old then
    redis.call('ZREM', AVAIL, old)
  end
  if new then
    redis.call('ZADD', AVAIL, r.p, new)
    if not old or new < old then -- listed anew, with fewer holders or more budget
      freed = true
    end
  end
end

-- unsynced notes that the pool's resources or their settings changed,
-- so that the digest of the last Sync ('#s', see sync) no longer
-- describes them.
local function unsynced()
  redis.call('HDEL', RES, '#s')
end

-- drop deletes r; it must have no holders and no listing.
local function drop(r)
  unsynced()
  redis.call('HDEL', RES, 'r' .. r.id)
  if r.s > 0 or r.q > 0 then
    redis.call('ZREM', SUSP, r.id)
  end
  if r.d then
    redis.call('HINCRBY', RES, '#d', '-1')
  end
  if r.b then
    redis.call('HINCRBY', RES, '#b', '-1')
  end
  dropped = true
end

-- suspend keeps r out of AVAIL until the later of its current end of
-- suspension and untl. The caller stores and relists r.
local function suspend(r, untl)
  if r.s >= untl then
    return
  end
  r.s = untl
  redis.call('ZADD', SUSP, num(math.max(untl, r.q)), r.id)
end

-- resched puts r in SUSP at the end of its rest, the later of its
-- suspension and its buckets' rest, or takes it out when it has
-- neither.
local function resched(r)
  local u = math.max(r.s, r.q)
  if u > 0 then
    redis.call('ZADD', SUSP, num(u), r.id)
  else
    redis.call('ZREM', SUSP, r.id)
  end
end

-- unsuspend ends r's suspension, and its ejection with it, if any. The
-- caller reschedules (resched), stores and relists r.
local function unsuspend(r)
  r.s = 0
  if r.e > 0 then
    r.e = 0
    redis.call('HINCRBY', RES, '#j', '-1')
  end
end
