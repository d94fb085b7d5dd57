// Package scheduler hands out reusable resources (API keys, proxies,
// replicas, GPU workers, connections) to many goroutines at once, best
// first by a comparator you define.
//
// New takes a config.Config (a Comparator, a KeyFunc, a policy, and
// optional capacity, leases, health and limits) and starts a scheduler;
// Add and BatchAdd give it resources. The main calls:
//
//   - Acquire returns the best available resource at once, or
//     errors.ErrNoResourceAvailable. Under config.Shared (the default) it
//     stays in the pool for others; under config.Exclusive it is held
//     until Release.
//   - AcquireContext does the same but waits, first come first served,
//     until a resource is free, its context ends or Shutdown.
//   - Lease waits like AcquireContext and returns a Lease, ended once by
//     Lease.Release, Lease.Cooldown (after a 429) or Lease.Fail (towards
//     config.Ejection), and expired after config.Config.LeaseTTL if set.
//     With config.Config.Limits (requests and tokens per minute), WithCost
//     takes a call's estimated cost in the grant's step and Lease.Settle
//     replaces it by what the call spent; a cost naming a limit no
//     resource has is refused (errors.ErrUnknownLimit) unless
//     AllowUnknownLimits is given. For API keys use config.Shared: leases
//     count the calls in flight and the limits meter them.
//   - AcquireByAffinity, AcquireByAffinityContext and LeaseByAffinity keep
//     an identifier on the same resource while it is available.
//   - Update, Exclude, Include, Suspend and Remove change a resource;
//     Get, Len and Stats read the pool; Shutdown closes the scheduler.
//
// Every method is safe for concurrent use, and every error is, or wraps,
// a sentinel of package errors: test with errors.Is.
//
// The package Example is the quick start; Example_exclusive,
// Example_capacity, ExampleScheduler_AcquireContext,
// ExampleScheduler_Lease, Example_apiKeyPool (cooldown, ejection, rate
// limit) and ExampleLease_Settle (budgets) show the rest.
//
// # States
//
// Every resource is in one state: active (acquirable), held (every slot
// taken), resting (suspended, cooling down, ejected or out of budget,
// until a deadline, after which it comes back by itself), excluded (by
// Exclude, until Include), draining (removed while it had holders, until
// the last one releases) or removed. Release ends a hold and Include
// applies only to excluded, suspended or ejected resources, so neither
// can hand a resource to a second holder.
//
// # User code
//
// KeyFunc, the strategy and the observers never run under a lock. The
// comparator does, so keep it fast and free of I/O; if it panics, the
// operation has no effect, no lock stays held and the panic reaches the
// caller (or, where there is none, is counted in
// stats.Stats.ComparatorPanics). Observers run on a goroutine of their
// own; their panics are counted in stats.Stats.ObserverPanics.
//
// How it works (shards, the state model, the lock order, waiting,
// budgets, the undo log): docs/ARCHITECTURE.md in the repository. How to
// use each feature: docs/GUIDE.md.
package scheduler
