package search

import (
	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/shard"
	"github.com/crsched/crs/internal/waiting"
)

// sweep takes a hold (the room's Grant) on the best resource of the first
// non-empty shard at or after start, or with GlobalOrder on the best
// resource of all shards (ties going to the first from start). A cost
// (g.Cost) goes to the best resource that covers it (see shard.Shard.Covering) of
// the first shard that has one, or with GlobalOrder of all shards. Where a
// shared acquisition changes nothing (lockFree), it reads the shard's
// published top instead, with no lock. It reports whether it found one.
func (p *Searcher[T, ID]) sweep(start int, lease bool, g *waiting.Grant[T, ID]) bool {
	if p.global {
		if g.Cost != nil {
			return p.sweepGlobalCost(start, lease, g)
		}
		return p.sweepGlobal(start, lease, g)
	}
	for i := range len(p.shards) {
		sh := &p.shards[p.Wrap(start+i)]
		if p.lockFree && !lease {
			if n, v, _ := p.read(sh); n != nil {
				g.Node, g.Value = n, v
				return true
			}
			continue
		}
		if !sh.Empty() && p.holdTop(sh, nil, 0, lease, g) {
			return true
		}
	}
	return false
}

// sweepGlobal compares the best of every shard, without locks, and takes
// the best one if no shard's top changed since it was read: then the
// tops compared were all there at one instant, the instant the chosen
// shard is locked. Otherwise (someone took, returned, added or changed a
// resource) it looks again; each retry means another caller's operation
// went through, so the loop ends. A caller whose tenant's budgets do not
// cover its cost finds nothing.
func (p *Searcher[T, ID]) sweepGlobal(start int, lease bool, g *waiting.Grant[T, ID]) bool {
	for {
		idx, n, v, seen := p.bestTop(start)
		if n == nil {
			return false
		}
		if p.lockFree && !lease {
			if now, _ := shard.Versions(p.shards); now == seen {
				g.Node, g.Value = n, v
				return true
			}
			continue
		}
		if p.holdTop(&p.shards[idx], n, seen, lease, g) {
			return true
		}
		if g.Tenant != nil && g.Tenant.Budgets != nil {
			// Refused by its tenant's budgets, perhaps, not by another
			// caller's change: looking again would find the same.
			if ok, _ := p.room.TenantCovers(g.Tenant, g.Cost); !ok {
				return false
			}
		}
	}
}

// sweepGlobalCost is sweepGlobal for a cost: it finds each shard's best
// resource that covers g.Cost, one shard lock at a time, and takes the
// best of those if it still covers the cost when its shard is locked
// again. Each retry means another caller took from that resource; after
// a few, it settles for the first shard's that has one, so that the
// loop ends.
func (p *Searcher[T, ID]) sweepGlobalCost(start int, lease bool, g *waiting.Grant[T, ID]) bool {
	for range 3 {
		var best *node.Node[T, ID]
		var bestValue T
		for i := range len(p.shards) {
			sh := &p.shards[p.Wrap(start+i)]
			if sh.Empty() {
				continue
			}
			n, v := p.coveringIn(sh, g.Cost)
			if n != nil && (best == nil || p.cmp(v, bestValue) < 0) {
				best, bestValue = n, v
			}
		}
		if best == nil {
			return false
		}
		if p.holdNode(best, lease, g) {
			return true
		}
	}
	for i := range len(p.shards) {
		if sh := &p.shards[p.Wrap(start+i)]; !sh.Empty() && p.holdTop(sh, nil, 0, lease, g) {
			return true
		}
	}
	return false
}

// coveringIn returns sh's best resource that covers cost (see shard.Shard.Covering)
// and its value, or nil.
func (p *Searcher[T, ID]) coveringIn(sh *shard.Shard[T, ID], cost config.Cost) (n *node.Node[T, ID], v T) {
	sh.Lock()
	defer sh.Unlock()
	p.room.Repair(sh, nil)
	if n, _ = sh.Covering(cost, p.room.Now()); n != nil {
		v = n.Value
	}
	return n, v
}

// bestTop returns the shard whose top is best, that top and its value
// (nil and 0 when every shard is empty), and the sum of the shards'
// versions at the moments their tops were read; ties go to the first
// shard at or after start, so the strategy spreads callers among equally
// good resources.
func (p *Searcher[T, ID]) bestTop(start int) (bestIdx int, best *node.Node[T, ID], bestValue T, versions uint64) {
	for i := range len(p.shards) {
		idx := p.Wrap(start + i)
		n, v, version := p.read(&p.shards[idx])
		versions += version
		if n == nil {
			continue
		}
		if best == nil || p.cmp(v, bestValue) < 0 {
			bestIdx, best, bestValue = idx, n, v
		}
	}
	return bestIdx, best, bestValue, versions
}

// read returns sh's top and its value as they were at one instant, with
// sh's version then. It takes no lock unless a writer is busy, and then
// waits for it under the lock rather than spin.
func (p *Searcher[T, ID]) read(sh *shard.Shard[T, ID]) (*node.Node[T, ID], T, uint64) {
	if n, v, version, ok := sh.Peek(); ok {
		return n, v, version
	}
	return p.LockedPeek(sh)
}

func (p *Searcher[T, ID]) LockedPeek(sh *shard.Shard[T, ID]) (n *node.Node[T, ID], v T, version uint64) {
	sh.Lock()
	defer sh.Unlock()
	p.room.Repair(sh, nil)
	if n = sh.Best(); n != nil {
		v = n.Value
	}
	return n, v, sh.Version.Load()
}

// holdTop takes a hold on the top of sh, into g; with want set, only if
// want is still the top and the shards' versions still sum to versions
// (see sweepGlobal). It reports whether it took one.
func (p *Searcher[T, ID]) holdTop(sh *shard.Shard[T, ID], want *node.Node[T, ID], versions uint64, lease bool, g *waiting.Grant[T, ID]) bool {
	sh.Lock()
	defer sh.Unlock()
	p.room.Repair(sh, nil)
	n := sh.Best()
	if n == nil {
		return false
	}
	if g.Cost != nil {
		if n, _ = sh.Covering(g.Cost, p.room.Now()); n == nil {
			return false
		}
	}
	if want != nil {
		if now, _ := shard.Versions(p.shards); n != want || now != versions {
			return false
		}
	}
	return p.room.Grant(sh, n, lease, g)
}
