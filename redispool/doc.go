// Package redispool is a pool of resources shared by many processes,
// kept in Redis (or Valkey): every replica of a service that opens the
// pool of the same name on the same Redis sees one pool, in which a
// resource is leased to one holder per slot at a time, whichever
// process the holders run in.
//
//	pool, err := redispool.New(client, redispool.Options{Name: "llm-keys"})
//	...
//	err = pool.Sync(ctx, []redispool.Resource{{ID: "key-1", Priority: 1}})
//	lease, err := pool.Acquire(ctx) // waits until a resource is free
//	...
//	callUpstream(lease.ID, lease.Token)
//	err = lease.Release(ctx)
//
// # Semantics
//
// They follow the in-process scheduler (package scheduler) where they
// make sense across processes: the lowest priority goes first and,
// among equal priorities, the resource with the most budget left, then
// the one with fewer holders; a resource
// takes up to Capacity leases at once; Exclude/Include take it out and
// put it back; Remove of a leased resource drains it; a lease ends with
// Release, Fail, Cooldown (release and suspend in one step) or its
// deadline, and a late Release returns ErrLeaseExpired and changes
// nothing. The differences: resources are described by a Resource (ID,
// priority, capacity, limits) rather than held as Go values; Exclude
// also accepts a resource whose every slot is leased; Suspend, which
// the pool adds, takes a resource out until a deadline.
//
// # Limits
//
// A resource's Limits are token buckets (config.Limit: Max units,
// refilled at Max per Per), such as an API key's requests and tokens
// per minute, kept exactly across every process of the pool: each
// bucket lives in the resource's field of {NAME}:res, and the script
// that grants a lease takes the call's cost from every bucket in the
// same step, by the server's clock, so no interleaving of processes can
// overdraw one. A resource is granted only if each of its buckets
// covers the cost (WithCost; a limit the cost does not name costs 1).
// Among equal priorities, the resource with the most budget left (its
// tightest bucket full again first) goes first, then the one with fewer
// holders, as in the core, so load spreads by remaining quota.
// Lease.Settle replaces the estimate by what the call spent (the lease
// records its estimate on the server), Lease.Observe lowers a bucket to
// what the provider reports, Lease.Cooldown rests the key after a 429,
// and Pool.Remaining reads the buckets:
//
//	err = pool.Sync(ctx, []redispool.Resource{{ID: "key-1", Capacity: 8, Limits: []config.Limit{
//		{Name: "requests", Max: 500, Per: time.Minute},
//		{Name: "tokens", Max: 30000, Per: time.Minute},
//	}}})
//	lease, err := pool.Acquire(ctx, redispool.WithCost(config.Cost{"tokens": estimate}))
//	...
//	resp, err := callUpstream(lease.ID, lease.Token)
//	err = lease.Settle(ctx, config.Cost{"tokens": resp.Usage.TotalTokens})
//	err = lease.Release(ctx)
//
// A resource whose buckets cannot cover even the default cost (one of
// them holds less than a unit, or is in debt after a Settle) rests off
// {NAME}:avail until the refill brings it back, in {NAME}:susp as a
// suspension does, so a call without a cost never looks further than
// the best resource. A call with a cost looks at the 64 best resources
// with a free slot for one that covers it (further down only while none
// of those ever will), and waits when none does; one whose cost is
// above a limit's Max on every resource returns ErrCostExceedsLimits at
// once (finding that out reads every resource, and happens only when no
// resource covers the cost). Waiters stay strictly first come, first
// served: the oldest waiter whose cost no resource covers yet holds back
// those behind it until a refill or a refund covers it, so a big call is
// never starved by small ones, and none waits for ever since buckets
// refill. The server tells the waiters when the refill that covers the
// oldest one's cost is due, so they wake then, without polling.
//
// The scripts count in Lua's doubles, exact for integers below 2^53: a
// bucket is kept as whole units and a remainder below its Per in
// milliseconds (Per is rounded up to a whole millisecond, which never
// raises the rate), so that a limit of billions of tokens a day refills
// exactly. Max is at most MaxLimitMax; a Per up to 26 hours takes any
// such Max, a longer one a Max up to 2^53 / Per - 2 (see MaxLimitMax).
// A bucket in debt records at most 2^51 units. Sync of an existing resource keeps its buckets' levels, cut to
// their new Max, as the core's Update does; Add of an existing one
// changes nothing.
//
// # Health
//
// Lease.Fail ends a lease as a failure of its resource: with
// Options.Ejection (the core's config.Ejection), enough failures in a
// row eject the resource for a while, longer each time, but never the
// last resource that is neither ejected nor excluded; a Release is a
// success and starts the count again, Include ends an ejection. The
// count and the ejections are kept with the resource, so every process
// sees them.
//
// # How it works
//
// Every change of state is one Lua script, run atomically by the
// server by EVALSHA (EVAL once when the server does not have it). There
// is no read-modify-write on the client, so processes never need a
// lock. A pool runs only code it sent itself: EVALSHA names a script by
// its SHA-1, whereas a FUNCTION library, called by name, could be
// replaced by any user allowed FUNCTION LOAD, so the pool uses none. On
// a server shared with others, give each pool a user of its own,
// allowed the keys and channels {NAME}:* and, of @scripting, EVAL and
// EVALSHA alone (README.md has the ACL).
// Every script first ends, by the server's clock (TIME), the leases past
// their deadline and the suspensions that are over (so a step forward of
// that clock ends leases early, while Lease.Deadline, the holder's
// estimate, still shows time left). So a process killed
// while holding leases loses them LeaseTTL after it took them at the
// latest, with nothing to run on any surviving process: the next call
// on the pool, from anyone, gives the slots back.
//
// The keys of pool NAME, all with the hash tag {NAME} so that they live
// in one Redis Cluster slot and every script declares all the keys it
// touches:
//
//	{NAME}:res     hash  one packed field per resource (capacity,
//	                     holders, flags, end of suspension, priority,
//	                     then any buckets, rest for them and health);
//	                     pool counters; the digest of the last Sync;
//	                     a long field that keeps it a hash table (as
//	                     in req), whose lookups do not scan
//	{NAME}:avail   zset  resources with a free slot, by priority, then
//	                     budget left, then holders
//	{NAME}:leases  zset  lease token, acquire request and resource ID
//	                     -> deadline (ms, server clock)
//	{NAME}:susp    zset  resource ID -> end of its suspension or rest
//	{NAME}:req     hash  acquire request -> its lease's token, what it
//	                     took from the buckets and resource ID, or a
//	                     waiter's entry (until when it holds, its lease
//	                     TTL, its process, its cost)
//	{NAME}:done:R  string a write request R's status (or an acquire
//	                     request's abandonment), with a TTL
//	{NAME}:token   string the last fencing token
//	{NAME}:queue   zset  waiting acquire request -> its arrival number
//	{NAME}:profiles hash a set of limits -> how many resources (draining
//	                     ones aside) have it
//
// They hold one entry per resource, per running lease and per waiter,
// and a key per write of the last RequestWindow, so that every lookup
// is O(1) whatever the pool's size; when the last resource leaves, the
// scripts delete all of them but the records of writes, which expire by
// themselves, and the token, which stays.
//
// # Fencing tokens
//
// Each token is the later of the last one plus one and the server's
// clock in microseconds. While the pool's data survives (the server runs
// on, restarts from a persistence file that holds the last grant, or a
// replica that had it is promoted), tokens therefore increase strictly,
// whatever the clocks do. When it is lost (a restart without
// persistence, a promoted replica that lacked the last grants, the keys
// deleted), the next token is greater than every earlier one if the
// server's clock is past the last of them, as it is when the clocks
// agree; a server whose clock is behind hands out lower tokens until its
// clock passes them, which a guarded system that keeps the highest token
// it has seen refuses: it turns holders away, it never lets two in.
//
// # Replicas
//
// Options.WaitReplicas makes every grant and every Lease.Extend wait
// (Redis WAIT, on the connection of the write) until that many replicas
// have it, so that the usual failover keeps every lease; a grant they
// do not acknowledge in Options.WaitTimeout is given back and returns
// ErrNotReplicated. Redis is not a consensus store: WAIT does not make
// it consistent, and a failover can still lose acknowledged grants (a
// replica that was not among those that acknowledged is promoted, or
// one restarts without the data), as Redisson's documentation and
// Kleppmann's "How to do distributed locking" say of every lock on
// Redis. The fencing token, checked by what the resource guards, is what
// protects the resource then.
//
// # Errors and retries
//
// Every call is a request with a random 128-bit ID. go-redis sends a
// command again when its connection breaks before the reply; the server
// records each write's status under its request for RequestWindow,
// and answers a copy of the request with that status
// without applying it again (an acquire request, with the same lease).
// So a write that returns nil was applied, once; one that returns a
// sentinel or an error reply of the server was not applied (but for
// ErrNotReplicated from Extend: applied on the primary, not confirmed by
// the replicas); one that returns the client's network error, or the
// context's error while the command was in flight, was applied once or
// not at all.
// Repeating Release, Cooldown, Fail, Extend, Settle or Observe on the
// same Lease sends the same request and so reports the first attempt's
// outcome; a repeated pool write is a new request, whose answer
// (ErrDuplicateKey for Add, ErrResourceNotFound for Remove...) tells
// that the first was applied.
// Acquire and TryAcquire return a lease or an error, never an error
// while a lease is held: a lease granted to a request whose reply was
// lost is given back in the background.
//
// # Waiting
//
// The waiters of every process form one queue, in Redis, and are
// served oldest first. An Acquire that finds no free slot, or older
// waiters, joins {NAME}:queue (TryAcquire returns
// ErrNoResourceAvailable instead: no call takes a slot ahead of an older
// waiter). The script that frees a slot grants it, in the same step, to
// the oldest waiter whose entry holds and PUBLISHes the grant on the
// channel of that waiter's Pool value alone ({NAME}:wake:ID; each Pool
// value has one subscription, opened by its first wait and closed by
// Close): a waiter sends its Acquire and then nothing until its
// Release. Waiting takes no polling: the oldest waiter of each Pool also
// asks again when the server will next free a slot by itself (known from
// the lease and suspension deadlines), and every waiter every
// RecheckInterval (at least MinRecheckInterval), with its own request,
// which the server answers with the lease it was granted (if its message
// was lost) or by keeping its place. An entry holds for three
// RecheckIntervals after the waiter's last look, so the waiters of a
// process that died are passed over after that (a slot granted to one
// before comes back at its lease's deadline); a waiter that leaves (ctx
// ends, Close) gives its request up, and a slot granted to it meanwhile
// goes to the next. The message cannot fail the script that made the
// grant: when the server refuses it (an ACL without the channel), the
// write still succeeds, Stats.WakeFailures counts it, and the waiter
// finds its grant at its next re-check. When Remove or Sync takes the
// pool's last resource away (even one that drains), the script that
// does it empties the queue and tells each waiter, which returns
// ErrPoolEmpty.
//
// # Redis
//
// Redis 5 or later (scripts that read TIME rely on effect replication,
// the default since 5 and the only mode since 7), or Valkey. Every
// process of a pool runs the same version of this package: the keys'
// layout is not shared between versions. Keep the
// pool's Redis persistent (AOF) if leases must survive a restart; a
// restart that loses the data loses the pool's resources with it (add
// them again) and every running lease, which then reports
// ErrLeaseExpired: none is handed out twice (see Fencing tokens for the
// tokens). Acquire then returns ErrPoolEmpty rather than wait: every
// replica of a service calling Sync with its configured resources at
// start, on a timer and on ErrPoolEmpty puts them back (Sync is one
// atomic, idempotent step, so the replicas' calls converge).
//
// Every call returns when its context ends, whether or not the server
// answers and whatever the client's ContextTimeoutEnabled: the command
// runs in a goroutine that lives on until the client gets the reply or
// gives up (the context's deadline with ContextTimeoutEnabled, which is
// recommended, or the client's timeouts), under a context of its own
// that carries the deadline but not the values of the caller's.
package redispool
