package scheduler

import (
	"fmt"
	"math"

	"github.com/crsched/crs/internal/lookup"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/shard"
)

// capacityOf runs the user's Capacity function, outside any lock, and
// brings its result into [1, math.MaxInt32] (see config.Config.Capacity):
// a node keeps its capacity and holder count in 32 bits.
func (s *Scheduler[T, ID]) capacityOf(v T) int32 {
	if s.capacity == nil {
		return 1
	}
	return int32(min(max(s.capacity(v), 1), math.MaxInt32))
}

func opError[ID comparable](op string, id ID, err error) error {
	return fmt.Errorf("%s %v: %w", op, id, err)
}

// find returns the node for id and its shard, or nil. The caller must lock
// the shard and check that the node was not removed in between.
func (s *Scheduler[T, ID]) find(id ID) (*node.Node[T, ID], *shard.Shard[T, ID]) {
	if s.checkKeys && !lookup.Usable(id) {
		return nil, nil // never added: Add refuses such a key
	}
	n, ok := s.nodes.Get(id)
	if !ok {
		return nil, nil
	}
	return n, &s.shards[n.Shard]
}
