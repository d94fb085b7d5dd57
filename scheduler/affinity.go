package scheduler

import (
	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/internal/affinity"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/waiting"
)

// sweepAffinity takes a hold on the resource the identifier maps to, or,
// while that one is unavailable, on the next available one in the
// identifier's order: the resources of its window by decreasing rank,
// into g, and reports whether it took one. It gives up after
// affinity.MaxTries resources (the caller then takes any resource).
func (s *Scheduler[T, ID]) sweepAffinity(id acquire.AffinityIdentifier, lease bool, g *waiting.Grant[T, ID]) bool {
	h := acquire.HashIdentifier(id)
	r := s.affinity.Ring()
	below := ^uint64(0)
	for range affinity.MaxTries {
		n, k := affinity.Candidate(r, h, below)
		if n == nil {
			return false
		}
		if s.holdNode(n, lease, g) {
			s.acquired(n)
			return true
		}
		below = k
	}
	return false
}

// holdNode takes a hold on n, into g, if it is still active and covers
// g.Cost, and reports whether it did.
func (s *Scheduler[T, ID]) holdNode(n *node.Node[T, ID], lease bool, g *waiting.Grant[T, ID]) bool {
	sh := &s.shards[n.Shard]
	sh.Lock()
	defer sh.Unlock()
	s.room.Repair(sh, nil)
	if n.State != node.Active {
		return false
	}
	if g.Cost != nil {
		if ok, _ := n.Budgets().Fits(g.Cost, s.now()); !ok {
			return false
		}
	}
	return s.grant(sh, n, lease, g)
}
