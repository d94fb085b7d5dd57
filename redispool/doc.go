// Package redispool is a pool of resources shared by many processes,
// kept in Redis (or Valkey): every replica of a service that opens the
// pool of the same name on the same Redis sees one pool, in which a
// resource is leased to one holder per slot at a time, whichever
// process the holders run in.
//
//	pool, err := redispool.New(client, redispool.Options{Name: "llm-keys"})
//	...
//	err = pool.Sync(ctx, []redispool.Resource{{ID: "key-1", Priority: 1, Capacity: 4}})
//	lease, err := pool.Acquire(ctx) // waits until a slot is free, in any process
//	...
//	callUpstream(lease.ID, lease.Token)
//	err = lease.Release(ctx)
//
// New opens a handle on the pool Options.Name (it sends nothing); Close
// ends the handle's waits. The main calls:
//
//   - Sync makes the pool's resources exactly the ones given, in one
//     atomic step: every replica calls it with its configured
//     resources at start, on a timer, and on ErrPoolEmpty (Redis lost
//     the data). Add, Update, Remove, Exclude, Include and Suspend
//     change one resource.
//   - Acquire waits for a free slot, in one queue with the waiters of
//     every process, oldest first, until its context ends; TryAcquire
//     does not wait. Both return a Lease, with the resource's ID and a
//     fencing Token to pass to what the resource guards.
//   - A lease ends with Lease.Release, Lease.Cooldown (release and rest
//     the resource, after a 429), Lease.Fail (towards Options.Ejection)
//     or its deadline (Options.LeaseTTL, 30 s by default; Lease.Extend
//     moves it).
//   - A Resource's Limits are the core's token buckets (config.Limit),
//     kept exactly across every process: WithCost takes a call's
//     estimated cost in the grant's step, Lease.Settle replaces it by
//     what the call spent, Lease.Observe lowers a bucket to what the
//     provider reports, Lease.Learn takes the limit it states, and
//     Pool.Remaining reads the buckets; a bucket of a limit with
//     Admission that a grant takes from full refills only from the next
//     of those answers, in any process, as in the core. A cost
//     that names a limit no resource of the pool has is refused
//     (errors.ErrUnknownLimit) unless AllowUnknownLimits is given.
//   - WithTenant and WithPriority order the waiters: the highest
//     priority first, then weighted fair shares between tenants (their
//     usage in Options.ShareBy over their weight, no credit banked while
//     idle), first come, first served within a tenant. SyncTenants sets
//     the tenants' weights and own limits for every process; a waiter
//     held back by its cost or its tenant's limits holds back only its
//     own tenant and priority, and a cost may name its tenant's limits.
//     Without these options the queue is first come, first served, as
//     before.
//   - Pool.Stats counts resources by state, leases and waiters;
//     Pool.Tenants adds waiters, grants and usage per tenant and
//     priority.
//
// The package Example is a complete program. Errors are the core's
// sentinels (github.com/crsched/crs/errors) where the meaning is the
// same, and this package's for its own inputs: test with errors.Is. A
// refused call changes nothing. The semantics follow the in-process
// scheduler where they make sense across processes: the lowest priority
// first, then the most budget left, then the fewest holders; Capacity
// slots per resource; draining on Remove.
//
// # How it works
//
// Every change is one Lua script, run atomically by the server (by
// EVALSHA), so processes need no lock between them. Every script first
// ends, by the server's clock, the leases past their deadline and the
// rests that are over, so a process that dies loses its leases at their
// deadline with nothing to run elsewhere. Waiters are served by the
// script that frees a slot and told by PUBLISH, without polling. Each
// call is a request with an ID, so a command that go-redis sends again
// is applied once. Options.WaitReplicas makes grants wait for replicas
// (Redis WAIT), which narrows but does not close the window in which a
// failover loses a lease: Redis is not a consensus store, and the
// fencing token is what protects the resource then.
//
// README.md in this module has the rest: every call with its errors,
// the keys of a pool and what each holds, what an error means for
// whether a write was applied, fencing tokens, restarts, timeouts, ACLs
// and failover. Every process of a pool must run the same version of
// this package: the keys' layout is not shared between versions.
package redispool
