package search

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
func (p *Searcher[T, ID]) sweepAffinity(id acquire.AffinityIdentifier, lease bool, g *waiting.Grant[T, ID]) bool {
	h := acquire.HashIdentifier(id)
	r := p.affinity.Ring()
	below := ^uint64(0)
	for range affinity.MaxTries {
		n, k := affinity.Candidate(r, h, below)
		if n == nil {
			return false
		}
		if p.holdNode(n, lease, g) {
			return true
		}
		below = k
	}
	return false
}

// holdNode takes a hold on n, into g, if it is still active and covers
// g.Cost, and reports whether it did.
func (p *Searcher[T, ID]) holdNode(n *node.Node[T, ID], lease bool, g *waiting.Grant[T, ID]) bool {
	sh := &p.shards[n.Shard]
	sh.Lock()
	defer sh.Unlock()
	p.room.Repair(sh, nil)
	if n.State != node.Active {
		return false
	}
	if g.Cost != nil {
		if ok, _ := n.Budgets().Fits(g.Cost, p.room.Now()); !ok {
			return false
		}
	}
	return p.room.Grant(sh, n, lease, g)
}
