package acquire

import (
	"cmp"
	"math"
	"math/bits"
	"slices"

	"github.com/crsched/crs/internal/hash"
)

// VirtualNodesPerShard is how many points each shard owns on the ring.
// One point per shard would leave arcs (and so loads) differing by a
// factor of several; with k points the relative spread of a shard's share
// falls like 1/sqrt(k); 500 keeps the busiest of 8 shards within about
// 10% of the mean for about 16 KiB of ring and index per shard.
const VirtualNodesPerShard = 500

// ConsistentHashRing maps affinity hashes to shards so that the same caller
// keeps landing on the same shard, and so that changing the shard count
// moves only about 1/n of the callers (a new ring of n+1 shards contains
// every point of the ring of n shards, since a point depends only on its
// shard and replica number).
//
// A lookup is O(1) expected: besides the sorted points, the ring keeps a
// bucket index on the top bits of the hash, with about four buckets per
// point, giving the search's starting place directly instead of
// binary-searching thousands of points; the scan after it usually stops at
// the first point it reads. Four buckets per point rather than one cost
// 16 bytes per point but make the scan's length predictable enough for the
// branch predictor.
//
// A ConsistentHashRing is immutable after construction and safe for
// concurrent use without locks.
type ConsistentHashRing struct {
	shards int
	// points is sorted by position and ends with a sentinel at
	// math.MaxUint64, so a scan always stops inside the slice; the
	// sentinel's owner is that of the first point, which is the
	// wrap-around. Position and owner sit together so a lookup touches one
	// cache line.
	points []vnode
	// bucket[b] is the index of the first point >= b<<shift, which is
	// where the search for any h with h>>shift == b starts.
	bucket []uint32
	shift  uint
}

type vnode struct {
	pos   uint64
	owner int32
}

const (
	// bucketsPerPoint trades index memory for lookup time; see
	// ConsistentHashRing.
	bucketsPerPoint = 4
	// maxBucketBits caps the index at 4 MiB. Rings beyond about 500
	// shards then have more than one point per bucket: lookups scan a
	// little further but stay correct.
	maxBucketBits = 20
	// maxRingShards keeps point indexes and owners within 32 bits.
	maxRingShards = math.MaxInt32 / VirtualNodesPerShard
)

// NewConsistentHashRing builds the ring for shardCount shards. A
// shardCount below 1 is treated as 1, so that a misconfigured scheduler
// still routes (everything to shard 0) instead of panicking on the hot
// path. It panics if shardCount exceeds about four million, a ring that
// would need tens of gigabytes.
func NewConsistentHashRing(shardCount int) *ConsistentHashRing {
	if shardCount < 1 {
		shardCount = 1
	}
	if shardCount > maxRingShards {
		panic("acquire: NewConsistentHashRing: shard count too large")
	}
	n := shardCount * VirtualNodesPerShard
	points := make([]vnode, 0, n+1)
	for s := range shardCount {
		for v := range VirtualNodesPerShard {
			points = append(points, vnode{vnodePosition(s, v), int32(s)})
		}
	}
	// Positions are distinct: vnodePosition is injective.
	slices.SortFunc(points, func(a, b vnode) int { return cmp.Compare(a.pos, b.pos) })
	points = append(points, vnode{math.MaxUint64, points[0].owner})

	k := min(bits.Len(uint(n*bucketsPerPoint-1)), maxBucketBits)
	r := &ConsistentHashRing{
		shards: shardCount,
		points: points,
		bucket: make([]uint32, 1<<k),
		shift:  uint(64 - k),
	}
	i := 0
	for b := range r.bucket {
		start := uint64(b) << r.shift
		for i < n && points[i].pos < start {
			i++
		}
		r.bucket[b] = uint32(i)
	}
	return r
}

// vnodePosition places replica v of shard s. The pair is packed into one
// integer, multiplied by an odd constant (splitmix64's increment) and
// mixed; both steps are bijections, so no two points collide and nearby
// pairs land far apart.
func vnodePosition(s, v int) uint64 {
	x := uint64(s)<<32 | uint64(v)
	return hash.Mix64((x + 1) * 0x9e3779b97f4a7c15)
}

// ShardCount is the number of shards the ring was built for (at least 1;
// the zero value counts as a ring of one shard).
func (r *ConsistentHashRing) ShardCount() int { return max(r.shards, 1) }

// GetShard returns the shard owning h: the owner of the first point at or
// after h, wrapping past the largest point to the smallest. The zero
// value, which has no points, returns 0, as CRS's did.
func (r *ConsistentHashRing) GetShard(h uint64) int {
	if len(r.bucket) == 0 {
		return 0
	}
	i := r.bucket[h>>r.shift]
	// The sentinel (MaxUint64 >= any h) ends the scan; its owner is the
	// first point's, which is the wrap-around.
	for r.points[i].pos < h {
		i++
	}
	return int(r.points[i].owner)
}
