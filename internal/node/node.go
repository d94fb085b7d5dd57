// Package node defines the scheduler's per-resource record and its states.
package node

// State is where a resource is in its lifecycle (see docs/ARCHITECTURE.md).
// Holders are counted separately: an active resource may have holders
// (when its capacity is above one, or under the Shared policy with leases),
// and so may an excluded one.
type State uint8

const (
	// Removed: not in the scheduler. A new node starts here and a removed
	// one ends here; a goroutine that still holds a pointer to it after it
	// was removed sees this state and treats the key as not found.
	Removed State = iota
	// Active: in its shard's heap, acquirable.
	Active
	// Held: every slot taken (Holders == Capacity, Exclusive policy); off
	// the heap until a holder releases.
	Held
	// Excluded: taken out of the pool by the operator, off the heap until
	// included. Existing holders keep their holds.
	Excluded
	// Draining: removed while held. It is invisible to every operation but
	// the release of its holds, and keeps its key in the lookup map (so the
	// key cannot be added again) until the last holder releases.
	Draining
)

var stateNames = [...]string{Removed: "removed", Active: "active", Held: "held", Excluded: "excluded", Draining: "draining"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "invalid"
}

// Node is one resource. Every field except Key and Shard is guarded by the
// lock of shard Shard; Key and Shard never change after the node is created.
//
// Invariants (whenever the shard lock is free):
//   - State == Active exactly when Index >= 0, and then the shard's heap
//     holds the node at Index;
//   - Holders == Anonymous + len(Leases);
//   - Draining implies Holders > 0.
type Node[T any, ID comparable] struct {
	Value T
	Key   ID
	Index int
	Shard int
	State State
	// Capacity is the number of holders the resource takes at once (>= 1).
	Capacity int
	// Holders is the number of holds outstanding.
	Holders int
	// Anonymous counts holds taken by Acquire, which end with Release(id).
	Anonymous int
	// Leases are the outstanding leases, each with its own token.
	Leases []Lease
	// Issued is the token of the latest lease on this node; tokens of a
	// node are never reused, so a stale handle never matches a later lease.
	Issued uint64
}

// Lease is one outstanding lease on a node.
type Lease struct {
	Token uint64
	// Deadline is when the lease expires, in scheduler clock nanoseconds;
	// 0 means never.
	Deadline int64
}

// New returns a node that is not yet in any structure.
func New[T any, ID comparable](v T, key ID, shard, capacity int) *Node[T, ID] {
	return &Node[T, ID]{Value: v, Key: key, Index: -1, Shard: shard, Capacity: capacity}
}

// FindLease returns the position of the lease with token, or -1.
func (n *Node[T, ID]) FindLease(token uint64) int {
	for i := range n.Leases {
		if n.Leases[i].Token == token {
			return i
		}
	}
	return -1
}

// DropLease removes the lease at position i (order is not kept).
func (n *Node[T, ID]) DropLease(i int) {
	last := len(n.Leases) - 1
	n.Leases[i] = n.Leases[last]
	n.Leases = n.Leases[:last]
}
