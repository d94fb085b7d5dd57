// Package node defines the scheduler's per-resource record and its states.
package node

// State is where a resource is in its lifecycle (see docs/ARCHITECTURE.md).
type State uint8

const (
	// Removed: not in the scheduler. A new node starts here and a removed
	// one ends here; a goroutine that still holds a pointer to it after it
	// was removed sees this state and treats the key as not found.
	Removed State = iota
	// Active: in its shard's heap, acquirable.
	Active
	// Held: acquired under the exclusive policy, off the heap until released.
	Held
	// Excluded: taken out of the pool by the operator, off the heap until
	// included.
	Excluded
)

var stateNames = [...]string{Removed: "removed", Active: "active", Held: "held", Excluded: "excluded"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "invalid"
}

// Node is one resource. Every field except Key and Shard is guarded by the
// lock of shard Shard; Key and Shard never change after the node is created.
//
// Invariant (whenever the shard lock is free): State == Active exactly when
// Index >= 0, and then the shard's heap holds the node at Index.
type Node[T any, ID comparable] struct {
	Value T
	Key   ID
	Index int
	Shard int
	State State
}

// New returns a node that is not yet in any structure.
func New[T any, ID comparable](v T, key ID, shard int) *Node[T, ID] {
	return &Node[T, ID]{Value: v, Key: key, Index: -1, Shard: shard}
}
