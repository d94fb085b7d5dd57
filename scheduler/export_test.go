package scheduler

import (
	"fmt"

	"github.com/crsched/crs/internal/node"
)

// CheckInvariants verifies the state model of docs/ARCHITECTURE.md with
// every shard locked (ascending, as BatchAdd does), so it sees one
// consistent moment. It repairs a heap left out of order by a panicking
// comparator first, as the next operation on that shard would.
func (s *Scheduler[T, ID]) CheckInvariants() error {
	for i := range s.shards {
		s.shards[i].mu.Lock()
		defer s.shards[i].mu.Unlock()
	}
	for i := range s.shards {
		s.shards[i].repair()
	}
	inHeap := 0
	for si := range s.shards {
		sh := &s.shards[si]
		h := &sh.heap
		if got := int(sh.active.Load()); got != h.Len() {
			return fmt.Errorf("shard %d publishes %d active, heap holds %d", si, got, h.Len())
		}
		for i := 0; i < h.Len(); i++ {
			n := h.At(i)
			if n.Index != i || n.State != node.Active || n.Shard != si {
				return fmt.Errorf("shard %d heap[%d]: node %v has index %d, state %v, shard %d", si, i, n.Key, n.Index, n.State, n.Shard)
			}
			if i > 0 && s.cmp(h.At((i-1)/2).Value, n.Value) > 0 {
				return fmt.Errorf("shard %d heap order broken at %d", si, i)
			}
			if m, ok := s.nodes.Get(n.Key); !ok || m != n {
				return fmt.Errorf("shard %d heap holds %v, which the map does not map to it", si, n.Key)
			}
		}
		inHeap += h.Len()
	}
	held := make([]int, len(s.shards))
	excluded := make([]int, len(s.shards))
	var err error
	total := 0
	s.nodes.Range(func(k ID, n *node.Node[T, ID]) {
		total++
		switch {
		case err != nil:
		case n.Key != k:
			err = fmt.Errorf("map key %v holds node %v", k, n.Key)
		case n.State == node.Removed:
			err = fmt.Errorf("map holds removed node %v", k)
		case (n.State == node.Active) != (n.Index >= 0):
			err = fmt.Errorf("node %v is %v at heap index %d", k, n.State, n.Index)
		case n.State == node.Active && s.shards[n.Shard].heap.At(n.Index) != n:
			err = fmt.Errorf("node %v not at its heap index", k)
		case n.State == node.Held:
			held[n.Shard]++
		case n.State == node.Excluded:
			excluded[n.Shard]++
		}
	})
	if err != nil {
		return err
	}
	off := 0
	for si := range s.shards {
		if held[si] != s.shards[si].held || excluded[si] != s.shards[si].excluded {
			return fmt.Errorf("shard %d counts %d held, %d excluded; map has %d, %d", si, s.shards[si].held, s.shards[si].excluded, held[si], excluded[si])
		}
		off += held[si] + excluded[si]
	}
	if total != inHeap+off {
		return fmt.Errorf("map holds %d nodes, heaps %d and off-heap %d", total, inHeap, off)
	}
	return nil
}

// StateOf returns the state name of the resource with key id ("absent"
// when there is none).
func (s *Scheduler[T, ID]) StateOf(id ID) string {
	n, sh := s.find(id)
	if n == nil {
		return "absent"
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return n.State.String()
}
