// Package scheduler hands out reusable resources (API keys, proxies,
// replicas, GPU workers, connections) to many goroutines at once, best
// first by an application-defined comparator.
//
// Resources are spread over HeapCount shards, each a binary heap under its
// own lock. Acquire asks the configured acquire.AcquireStrategy for a
// shard and returns that shard's best resource (or, with GlobalOrder, the
// best of all shards); AcquireByAffinity maps an identifier to one
// resource through a Maglev table over the resources. Under the Shared
// policy an acquired resource stays in the pool; under Exclusive it leaves
// the pool until Release.
//
// # States
//
// Every resource is in exactly one state, and every transition happens
// under the lock of the resource's shard:
//
//	active    in its shard's heap          -> held (Acquire, Exclusive), excluded, removed
//	held      acquired, off the heap       -> active (Release), removed
//	excluded  set aside by the operator    -> active (Include), removed
//	removed   gone                         (terminal)
//
// Release applies only to a held resource and Include only to an excluded
// one, so neither can hand a resource to a second holder.
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
