package config

import "strconv"

// AcquirePolicy decides what Acquire does with the resource it returns.
// It is a byte, as in CRS.
type AcquirePolicy uint8

const (
	// Shared leaves the acquired resource in the pool: many callers may use
	// it at once, and Release is not used.
	Shared AcquirePolicy = iota
	// Exclusive takes the acquired resource out of the pool until its
	// holder calls Release.
	Exclusive
)

func (p AcquirePolicy) valid() bool { return p == Shared || p == Exclusive }

// String returns "shared" or "exclusive".
func (p AcquirePolicy) String() string {
	switch p {
	case Shared:
		return "shared"
	case Exclusive:
		return "exclusive"
	}
	return "AcquirePolicy(" + strconv.Itoa(int(p)) + ")"
}

// Ordering decides how far Acquire looks for the best resource.
type Ordering int

const (
	// ShardOrder (the zero value) is the original library's behaviour: the
	// strategy picks a shard and Acquire returns that shard's best
	// resource. It touches one shard, but with HeapCount > 1 the resource
	// it returns need not be the best in the pool.
	ShardOrder Ordering = iota
	// GlobalOrder makes Acquire return the best available resource across
	// all shards; the strategy only breaks ties and spreads contention. It
	// compares every shard's best (without locks) on each call.
	GlobalOrder
)

func (o Ordering) valid() bool { return o == ShardOrder || o == GlobalOrder }

// String returns "shard" or "global".
func (o Ordering) String() string {
	switch o {
	case ShardOrder:
		return "shard"
	case GlobalOrder:
		return "global"
	}
	return "Ordering(" + strconv.Itoa(int(o)) + ")"
}
