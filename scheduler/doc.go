// Package scheduler hands out reusable resources (API keys, proxies,
// replicas, GPU workers, connections) to many goroutines at once, best
// first by an application-defined comparator.
//
// Resources are spread over HeapCount shards, each a binary heap under its
// own lock. Acquire asks the configured acquire.AcquireStrategy for a
// shard and returns that shard's best resource (or, with GlobalOrder, the
// best of all shards); AcquireByAffinity maps an identifier to one
// resource through a consistent-hash ring over the resources. Under the Shared
// policy an acquired resource stays in the pool; under Exclusive it leaves
// the pool until Release.
//
// # States
//
// Every resource is in exactly one state, and every transition happens
// under the lock of the resource's shard:
//
//	active    in its shard's heap, acquirable  -> held (last slot taken), resting, excluded, removed, draining
//	held      every slot taken, off the heap   -> active (a hold ends), resting, draining
//	resting   off the heap until a deadline    -> active or held (deadline, Include), excluded, removed, draining
//	excluded  set aside by Exclude             -> active, held or resting (Include), removed, draining
//	draining  removed while it had holders     -> removed (its last hold ends)
//	removed   gone                             (terminal)
//
// A resource rests after Suspend, a release cooldown, an ejection after
// repeated failures, or while its rate limit has no token; it comes back
// by itself. Holds are counted apart from the state: under the Exclusive
// policy a resource with Capacity above one stays active, with holders,
// until its last slot is taken, and resting, excluded and draining
// resources keep the holds they had. Remove of a resource with holders
// drains it: its holders release it as usual and its key stays taken
// until the last one does.
//
// Release applies only to a hold, and Include only to an excluded
// resource or one resting after a suspension or ejection, so neither can
// hand a resource to a second holder.
// CRS v1.2.3 had two states, active and inactive, and let Release and
// Include mix up held and excluded resources.
//
// # Budgets
//
// config.Config.Limits gives each resource token buckets, the way
// providers state their rate limits (config.Limit: at most Max units at
// once, refilled continuously at Max per Per), such as requests and
// tokens per minute for an API key. Every bucket is part of the
// resource's state, changed under its shard's lock:
//
//   - A hold spends a cost: WithCost for Lease and LeaseByAffinity, and
//     otherwise 1 unit of every limit (so a requests limit needs no
//     cost). A resource is handed out only if each of its buckets covers
//     the cost, and the cost is taken in the same step as the hold.
//   - Lease.Settle replaces the estimate by what the call really spent:
//     less refunds, more takes, and a bucket left in debt rests the
//     resource until it is repaid. Only a settlement can make a debt;
//     estimates never overdraw a bucket.
//   - Lease.Observe feeds back the provider's own figures (remaining
//     units and the reset time), so that a bucket never believes it has
//     more than the provider says; a 429 with a Retry-After is
//     Lease.Cooldown.
//   - A resource with less than one unit in some bucket rests (state
//     resting, counted in stats.Stats.RateLimitedResources) until the
//     refill brings it one, so every resource in a heap covers the
//     default cost and a plain Acquire costs what it did.
//   - A cost that the shard's best resource does not cover goes to the
//     best one that does among the first 64 entries of the shard's heap
//     (its top levels); a resource where the cost is above a limit's Max
//     is skipped, and a cost above a limit's Max on every resource fails
//     at once with ErrCostExceedsLimits. Under ShardOrder a lease with a
//     cost gets the best covering resource of the first shard, from the
//     one the strategy picks, that has one; under GlobalOrder the best
//     of every shard's best covering resource.
//   - Among resources the comparator ranks equal, the one whose tightest
//     bucket is full again first (the most budget left) comes first. The
//     heap key is that instant, computed when a bucket changes, so it
//     does not move with time; two resources with full buckets compare
//     by when they filled, either being full.
//   - Waiting callers are served in strict FIFO order while budgets are
//     configured: a caller does not pass the ones that wait, even if the
//     budgets cover its own cost (non-waiting Acquire calls then report
//     ErrNoResourceAvailable). So a large cost is never starved by small
//     ones; the price is that small calls wait behind a large one until
//     a refill covers it, at most its cost's refill time on the resource
//     that refills first. The oldest waiter is served, without polling,
//     by the scheduler's one timer at the first instant a bucket in the
//     scanned part of a heap covers its cost, or when a release, refund,
//     Update, Add or end of a rest makes one available.
//
// Scheduler.Remaining reads a resource's budgets, Scheduler.Budgets those
// of the whole pool (an exporter's scrape); stats.Stats.LimitWaits
// counts the waits that limits caused, where a resource had a free slot
// (not those for a resource whose every slot is taken). Without Limits
// none of this runs.
//
// # User code
//
// The comparator runs under a shard lock; KeyFunc, the strategy and the
// observers never do. If the comparator panics, the operation is undone,
// the lock is released and the panic reaches the caller; the heap order is
// rebuilt by the next operation on that shard. Where no caller can be told
// (on the scheduler's timer, or while a resource freed by an operation
// that has taken effect is handed to a waiter) the panic is recovered and
// counted (stats.Stats.ComparatorPanics), and the timer's step is retried
// shortly after. Observers run on a dispatcher goroutine and their panics
// are recovered and counted (stats.Stats.ObserverPanics).
package scheduler
