package scheduler

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/crsched/crs/internal/heap"
	"github.com/crsched/crs/internal/node"
)

// shard is one independently locked heap and the resources assigned to it.
// A resource belongs to one shard for its whole life, so every transition
// of a resource happens under that shard's lock alone.
//
// Every method below requires mu to be held. The state-changing methods are
// transactions: if the comparator panics part-way, they undo the structural
// change (which calls no user code), restore the node's state and leave the
// heap marked for reordering, then let the panic continue to the caller.
type shard[T any, ID comparable] struct {
	mu sync.Mutex

	// Guarded by mu.
	heap     heap.Heap[T, ID]
	held     int
	excluded int
	// dirty is set while the comparator runs on the heap and cleared when
	// it returns. Finding it set on lock means a comparator panicked
	// mid-sift and the heap order must be rebuilt before use.
	dirty bool

	// active mirrors heap.Len() for readers that take no lock (ShardView,
	// and Acquire skipping empty shards). Written only under mu.
	active atomic.Int64
	// arrivals counts resources that became active in this shard. It is
	// incremented under mu after active is updated, and lets Acquire prove
	// that all shards were empty at one instant before it reports
	// ErrNoResourceAvailable (see Scheduler.take).
	arrivals atomic.Uint64

	// Keeps neighbouring shards in a []shard off each other's cache lines.
	_ [64]byte
}

func newShard[T any, ID comparable](cmp func(a, b T) int) shard[T, ID] {
	return shard[T, ID]{heap: heap.New[T, ID](cmp)}
}

// repair rebuilds the heap order if a comparator panicked during an earlier
// operation. It runs the comparator, so the caller must already have
// deferred the unlock.
func (s *shard[T, ID]) repair() {
	if s.dirty {
		s.heap.Init()
		s.dirty = false
	}
}

// publish refreshes the lock-free view of the heap size.
func (s *shard[T, ID]) publish() { s.active.Store(int64(s.heap.Len())) }

// count moves n between the per-state counters; the heap length is the
// count of active nodes.
func (s *shard[T, ID]) count(from, to node.State) {
	switch from {
	case node.Held:
		s.held--
	case node.Excluded:
		s.excluded--
	}
	switch to {
	case node.Held:
		s.held++
	case node.Excluded:
		s.excluded++
	}
}

// activate moves n from state from into the heap.
func (s *shard[T, ID]) activate(n *node.Node[T, ID], from node.State) {
	s.heap.Append(n)
	s.count(from, node.Active)
	n.State = node.Active
	done := false
	defer func() {
		if !done {
			s.heap.Delete(n.Index)
			s.count(node.Active, from)
			n.State = from
		}
		s.publish()
		if done {
			s.arrivals.Add(1)
		}
	}()
	s.dirty = true
	s.heap.Up(n.Index)
	s.dirty = false
	done = true
}

// deactivate takes active node n out of the heap into state to.
func (s *shard[T, ID]) deactivate(n *node.Node[T, ID], to node.State) {
	i := n.Index
	s.heap.Delete(i)
	s.count(node.Active, to)
	n.State = to
	done := false
	defer func() {
		if !done {
			s.heap.Append(n)
			s.count(to, node.Active)
			n.State = node.Active
		}
		s.publish()
	}()
	if i < s.heap.Len() {
		s.dirty = true
		s.heap.Fix(i)
		s.dirty = false
	}
	done = true
}

// move changes the state of n, which must be off the heap, to another
// off-heap state.
func (s *shard[T, ID]) move(n *node.Node[T, ID], to node.State) {
	s.count(n.State, to)
	n.State = to
}

// replace gives n a new value and restores the heap order around it.
func (s *shard[T, ID]) replace(n *node.Node[T, ID], v T) {
	old := n.Value
	n.Value = v
	if n.State != node.Active {
		return
	}
	done := false
	defer func() {
		if !done {
			n.Value = old
		}
	}()
	s.dirty = true
	s.heap.Fix(n.Index)
	s.dirty = false
	done = true
}

// order restores the heap order after k nodes were appended: sifting each
// up costs O(k log n), rebuilding the whole heap O(n); take the cheaper.
func (s *shard[T, ID]) order(k int) {
	n := s.heap.Len()
	s.dirty = true
	if k*bits.Len(uint(n)) >= n {
		s.heap.Init()
	} else {
		for i := n - k; i < n; i++ {
			s.heap.Up(i)
		}
	}
	s.dirty = false
}
