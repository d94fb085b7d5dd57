-- settle: replace what lease ARGV[2] paid from its resource's buckets by
-- what it spent, ARGV[3] (see parse_cost), for the names it gives: a
-- refund of the difference, up to full, or a further take, which may
-- leave a bucket in debt: the resource then rests until each of its
-- buckets holds a unit again. A bucket the lease did not pay into (one
-- added since it was granted, even under a name it paid for before
-- Sync dropped it) is left alone. The lease records the new
-- amounts, so that a second settle corrects the first. A settlement is
-- an answer: the resource's held buckets refill from now (admitted).
-- Reply: {OK}, or {NONE} when the pool does not have the lease.
local token, request = split_lease(ARGV[2])
local entry = redis.call('HGET', REQ, request)
local granted, id, paid, part = split_entry(entry)
if granted ~= token then -- REQ keeps the lease's entry while it runs
  return { NONE }
end
if part then
  -- A grant to a class: its usage (ARGV[4]: Options.ShareBy, hex) and
  -- its tenant's buckets too.
  local refunded
  part, refunded = fair().settle_fair(part, parse_cost(ARGV[3]), ARGV[4])
  if refunded then
    freed = true -- a refund to the tenant may cover a waiter
  end
  redis.call('HSET', REQ, request, lease_entry(token, id, paid, part))
end
local r = load(id)
if not r or not r.b then
  return { OK }
end
if not paid then
  if admitted(r) then
    store(r)
  end
  return { OK }
end
local actual, before = parse_cost(ARGV[3]), parse_cost(paid)
admitted(r)
for _, b in ipairs(r.b) do
  local est, act = before[b.n], actual[b.n]
  if est and act and tonumber(token) > b.born then
    settle_bucket(b, est, act)
    if act < est then
      freed = true -- the refund may cover the oldest waiter's cost
    end
  end
end
local now_paid = {}
for n, a in string.gmatch(paid, '(%x+)=(%d+)') do
  now_paid[#now_paid + 1] = n .. '=' .. (actual[n] and num(actual[n]) or a)
end
redis.call('HSET', REQ, request, lease_entry(token, id, table.concat(now_paid, ','), part))
local old = listing(r)
set_rest(r, budget_rest(r))
store(r)
relist(r, old)
return { OK }
