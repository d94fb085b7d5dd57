package acquire

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// LocalStrategy gives each of the runtime's processors (its Ps, which run
// the goroutines, GOMAXPROCS of them) a home shard, and starts every
// Acquire made on that P there. Goroutines that run at the same moment run
// on different Ps, so they work in different shards, and each shard's
// lock, counts and heap stay in the cache of the core that uses them.
// With any other strategy two cores take turns in every shard, and each
// turn moves the shard's cache lines from one core to the other: on a
// virtual machine whose cores are far apart that costs more than the work
// itself (docs/BENCHMARKS.md has parallel exclusive Acquire + Release
// with this strategy and with round robin).
//
// It suits the Exclusive policy, where each Acquire and Release writes to
// its shard. There, the goroutines of a P keep taking the best free
// resources of its home shard, and take resources from other shards only
// while all of its home's are held: with ShardOrder, a P's first choice is
// the best of its home, not of the pool, as with any strategy. Under the Shared
// policy with ShardOrder every caller on one P gets the best resource of
// the same shard, so the load spreads over GOMAXPROCS resources at most;
// under GlobalOrder the strategy only breaks ties between equally good
// resources, and this one sends each P to its own.
//
// A home is a preference, not an assignment. It is kept in a sync.Pool,
// the one per-P store the standard library offers: a Get and a Put find
// the P's own home without a lock or a shared write. The pool may drop
// homes at a garbage collection, and a goroutine that moves to another P
// between the two may carry its home along; a P without one gets a new
// home. New homes are spread over the shards in bit-reversed order (the
// k-th at fraction reverse(k) of the way round: 0, 1/2, 1/4, 3/4, ...),
// so that with 2^m shards the first 2^m homes are all different, and
// with any count the homes in use are rarely neighbours, which keeps a P
// whose home is empty, and which moves on to the next shard, out of
// another's home.
//
// The zero value is ready to use. A LocalStrategy is safe for concurrent
// use and must not be copied after first use.
type LocalStrategy struct {
	homes sync.Pool     // of *home
	made  atomic.Uint64 // homes made so far: the next one's k
}

// home is a P's home shard, as a fraction of the way round the shards,
// times 2^64, so that it names a shard for any shard count.
type home struct{ at uint64 }

// NewLocalStrategy returns a strategy that starts each Acquire in the
// home shard of the P it runs on.
func NewLocalStrategy() *LocalStrategy { return &LocalStrategy{} }

// Select returns the home shard of the calling goroutine's P. With fewer
// than two shards it returns 0 without looking (with ShardCount() < 1
// there is no valid answer and the scheduler's range check reports it).
func (l *LocalStrategy) Select(view ShardView) int {
	n := view.ShardCount()
	if n <= 1 {
		return 0
	}
	h, _ := l.homes.Get().(*home)
	if h == nil {
		h = &home{at: bits.Reverse64(l.made.Add(1) - 1)}
	}
	shard := homeShard(h.at, n)
	l.homes.Put(h)
	return shard
}

// homeShard is the shard of n that the fraction at (times 2^64) falls in.
func homeShard(at uint64, n int) int {
	shard, _ := bits.Mul64(at, uint64(n))
	return int(shard)
}

// String names the strategy as CRS did, for Stats.
func (*LocalStrategy) String() string { return "Local" }
