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
// # User code
//
// The comparator runs under a shard lock; KeyFunc, the strategy and the
// observers never do. If the comparator panics, the operation is undone,
// the lock is released and the panic reaches the caller; the heap order is
// rebuilt by the next operation on that shard. Observers run on a
// dispatcher goroutine and their panics are recovered and counted
// (stats.Stats.ObserverPanics).
package scheduler
