-- The pool's helpers: this file, those scripts.go lists after it and
-- epilogue.lua's call. Each operation is a script of its own, these
-- helpers and the operation's body as a function, called by EVALSHA, so
-- that every state change is one atomic step on the server; nothing
-- here runs per call but the definitions, begin and what the operation
-- calls.
--
-- KEYS (all share the {name} hash tag, so one Redis Cluster slot):
--   1 res     hash: 'r' .. ID -> the resource, one field packed as
--             "capacity holders flag suspension priority", where flag
--             is '-', 'x' (excluded) or 'd' (removed while leased) and
--             suspension the end of its suspension (ms, 0 for none);
--             its buckets, rest for them and health may follow (see
--             parse_ext), and other space-separated fields are kept as
--             they are. One field per resource keeps every lookup O(1)
--             whatever the pool's size. Pool counters: '#n' resources,
--             '#x' excluded, '#d' draining, '#e' expired leases, '#q'
--             waiters queued so far (their order), '#b' resources with
--             buckets (live or draining), '#l' resting for their
--             buckets, '#j' ejected, '#w' waits the limits caused,
--             '#s' the digest of the last Sync while nothing changed
--             the resources since (unsynced), '#h' HASH_TABLE
--   2 avail   zset: resources that can be leased now, score = priority,
--             member = 14-digit time (ms) at which its buckets are all
--             full again (0: full, or none) .. 10-digit holders .. ':'
--             .. ID, so that among equal priorities the most budget
--             left sorts first (the core's headroom), then fewer
--             holders
--   3 leases  zset: token .. ':' .. request .. ':' .. ID -> deadline
--             (ms, server clock), each member a running lease: its
--             fencing token, its acquire request (32 hex digits) and
--             resource. The client names a lease by its member, so
--             that ending one reads nothing to learn whose it is.
--   4 susp    zset: ID -> end of its rest (ms, server clock): the later
--             of its suspension (an ejection is one) and its rest for
--             its buckets
--   5 req     hash: request -> token .. ':' .. ID, the lease an acquire
--             request got (while it runs), so that a retried request
--             gets the same lease and an abandoned one (its reply lost)
--             can be given back; for a lease on a resource with
--             buckets, token .. '+' .. what it paid .. ':' .. ID (see
--             charge), which Settle replaces; or, for
--             a request waiting in QUEUE, 'q EXPIRY TTL PROCESS[ COST]':
--             until when its entry holds (the waiter re-checks before
--             then), its lease TTL (ms), its process's id and its cost
--             (see parse_cost; none for the default); '#h' HASH_TABLE
--   6 token   string: the last fencing token granted. It outlives the
--             pool's other keys (tidy leaves it), so that tokens never go
--             back while the data survives, whatever the clocks do.
--   7 queue   zset: waiting acquire request -> its arrival number. A
--             freed slot goes to the oldest waiter whose entry holds,
--             granted in the script that frees it; the waiter's process
--             is told on the channel ARGV[1] .. ':' .. PROCESS.
--   8 profiles hash: a resource's limits as the client sends them
--             ('' for none) -> how many resources, draining ones aside,
--             have exactly those, so that a cost that none can ever
--             cover is known without reading every resource; and '#' ..
--             a limit's NAME (hex) -> how many of those fields have it,
--             so that a cost's unknown name is known (count_profile)
--   9 fair    zset: the tenants (SyncTenants), the classes of waiters
--             (WithTenant, WithPriority) and their order of service,
--             as records in lexical order (see fair.lua)
--  10 done    string, the call's own: the status recorded for its
--             request (for an acquire request, that it was abandoned),
--             expiring a window after it was written, so that the same
--             request sent again (go-redis resends a command whose
--             connection broke before its reply) gets the first answer
--             instead of applying twice. A key of its own, not a field
--             of a shared hash, so that it expires by itself and a
--             lookup never scans.
-- ARGV[1] is always that channel's prefix; the last three are the
-- call's request ('' for none), the window (ms) and '1' when the call's
-- status is to be recorded.
--
-- epilogue.lua's call runs an operation and replies {status, wake error
-- or 0, the rest of the operation's reply}.
--
-- Time is the server's (TIME), read once per call by begin: every
-- operation needs it, to end the leases and suspensions that are over and to
-- date its record. With effect replication (the only mode since Redis
-- 7, the default since 5) a script that reads TIME replicates its
-- writes, not itself, so replicas and the AOF stay exact.
local KEYS, ARGV -- the call's, set by begin
local RES, AVAIL, LEASES, SUSP, REQ, TOKEN, QUEUE, PROFILES, FAIR, DONE
local WAKE, REQUEST, WINDOW, RECORD
-- now is the server's time in ms; now_text the same as text, and
-- now_us_text the time in microseconds as text, so that the common
-- steps format no number.
local now, now_text, now_us_text

-- Status codes returned as the first element of every reply; the client
-- maps the negative ones to sentinel errors.
local OK, NONE, NOT_FOUND, DUPLICATE, DRAINING, NOT_ACTIVE, NOT_EXCLUDED, NOT_INACTIVE, EMPTY, EXCEEDS, UNKNOWN_LIMIT, QUEUED =
  1, 0, -1, -2, -3, -4, -5, -6, -7, -8, -9, 2

local freed    -- a slot may have become leasable: serve waiters
local dropped  -- a resource left or began to drain: the pool may be empty now
local wake_err -- the error of a refused PUBLISH (or 0), for the client to count

-- num formats an integer kept in a double (below 2^63 in magnitude,
-- as every figure here is), exactly. Every number passed to redis.call
-- goes through it: the server would format it as a float, which costs
-- more.
local function num(x)
  return string.format('%d', x)
end

-- call_state returns the call's state for the helpers built on first
-- use (fair.lua). Defined among the first: each call creates every
-- helper anew, and that costs a search per outer local a helper uses,
-- the longer the more helpers come between the two.
local function call_state()
  return now, RES, REQ, QUEUE, FAIR
end

-- recorded is the status recorded for the call's request, or nil.
local function recorded()
  return redis.call('GET', DONE) or nil
end

-- repeated is the reply of an operation that ends a lease and found it
-- gone: the status recorded for the call's request, if it has one (the
-- same command sent again, which ended the lease the first time), or
-- NONE.
local function repeated()
  local seen = RECORD and recorded()
  if seen then
    return { tonumber(seen) }
  end
  return { NONE }
end

-- record keeps status for the call's request for a window.
local function record(status)
  redis.call('SET', DONE, num(status), 'PX', WINDOW)
end
