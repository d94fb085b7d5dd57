// Package acquire decides where Acquire looks first: the AcquireStrategy
// interface with its built-in strategies (round robin, weighted, adaptive,
// local), and a consistent hash ring for routing identifiers to shards.
//
// A strategy only picks a shard; the comparator decides which resource in
// that shard is best. The two concerns are deliberately separate.
package acquire

// ShardView is the read-only view of the shards a strategy chooses from.
// Its methods read no lock and may be called concurrently.
type ShardView interface {
	// ShardCount is the number of shards (the scheduler's HeapCount).
	ShardCount() int
	// ActiveCount is the number of acquirable resources in the shard.
	ActiveCount(shard int) int
}

// AcquireStrategy picks the shard Acquire looks in first. Select must
// return an index in [0, view.ShardCount()); the scheduler returns
// errors.ErrInvalidAcquireStrategy otherwise. Select is called concurrently
// from many goroutines, and never while the scheduler holds a lock, so it
// may be slow or panic without harming the scheduler.
type AcquireStrategy interface {
	Select(view ShardView) int
}

// AffinityIdentifier identifies a caller (user, session, tenant) whose
// requests should keep landing on the same place. AppendAffinityBytes
// appends a stable byte encoding of the identifier to dst and returns the
// extended slice, like strconv.AppendInt.
type AffinityIdentifier interface {
	AppendAffinityBytes(dst []byte) []byte
}

// StringIdentifier is an AffinityIdentifier for string keys.
type StringIdentifier string

// AppendAffinityBytes appends the string's bytes.
func (s StringIdentifier) AppendAffinityBytes(dst []byte) []byte { return append(dst, s...) }
