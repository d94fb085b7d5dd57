// Package search finds a resource for a caller that does not wait, among
// a pool's shards, and takes a hold on it for the caller: the best of the
// first shard that has one from where the strategy starts, or under
// GlobalOrder the best of all shards at one instant, or for an affinity
// identifier the resource it maps to; with a cost, the best one that
// covers it. It owns two proofs: a GlobalOrder grant was the best of all
// shards at one instant (sweepGlobal), and a search that finds nothing
// saw the whole pool empty at one instant (ProveEmpty).
//
// A scheduler keeps one Searcher over its shards:
//
//	if s.room.MustQueue(g) || !s.search.Search(start, id, lease, g) {
//		... wait, or s.search.ProveEmpty(start, lease, g) ...
//	}
//
// The hold itself is the waiting room's Grant, which spends from the
// caller's tenant in the same step.
package search

import (
	"github.com/crsched/crs/acquire"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/affinity"
	"github.com/crsched/crs/internal/shard"
	"github.com/crsched/crs/internal/waiting"
)

// Searcher searches a pool's shards. Init it before use; it is safe for
// concurrent use.
type Searcher[T any, ID comparable] struct {
	shards []shard.Shard[T, ID]
	cmp    func(a, b T) int
	room   *waiting.Room[T, ID]
	// global: config.GlobalOrder. lockFree: a shared acquisition changes
	// nothing (Shared policy, no rate limits or budgets), so that a
	// caller that takes no lease reads a shard's published top, with no
	// lock.
	global, lockFree bool
	affinity         *affinity.Map[T, ID]
}

// Init sets what s searches: shards, ordered by cmp, whose holds room
// grants, with the affinity map aff.
func (p *Searcher[T, ID]) Init(shards []shard.Shard[T, ID], cmp func(a, b T) int, room *waiting.Room[T, ID], aff *affinity.Map[T, ID], global, lockFree bool) {
	p.shards, p.cmp, p.room, p.affinity, p.global, p.lockFree = shards, cmp, room, aff, global, lockFree
}

// Wrap returns shard index i, which is below twice the shard count, on
// the ring of shards.
func (p *Searcher[T, ID]) Wrap(i int) int {
	if i >= len(p.shards) {
		i -= len(p.shards)
	}
	return i
}

// search takes a hold: for id, on the resource it maps to or the next
// available in its order, else (and without id) on the best of the
// shard the strategy picked, or of the next non-empty shards.
func (p *Searcher[T, ID]) Search(start int, id acquire.AffinityIdentifier, lease bool, g *waiting.Grant[T, ID]) bool {
	return id != nil && p.sweepAffinity(id, lease, g) || p.sweep(start, lease, g)
}

// proveEmpty, after a search found nothing, reports ErrNoResourceAvailable
// once it has proved that the pool was empty at one instant, or takes a
// hold (see sweep) on a resource that turned up meanwhile, into g.
//
// The proof needs care: shards are checked one after another, and a
// resource may arrive in a shard already checked while a later one is
// emptied, so that the pool was never empty at any one instant. Each
// shard counts the times it went from empty to not (its arrivals); when
// a sweep finds nothing, the sum of those counts taken before and after
// the sweep proves that no shard seen empty filled in between (the counts
// only grow), and then every shard was empty at the end of the sweep. If
// something did arrive, sweep again: that resource was taken by another
// caller, so the system as a whole made progress. The search before goes
// without the proof, which most calls do not need.
func (p *Searcher[T, ID]) ProveEmpty(start int, lease bool, g *waiting.Grant[T, ID]) error {
	for {
		before := p.arrivals()
		if p.sweep(start, lease, g) {
			return nil
		}
		if p.arrivals() == before {
			return crserrors.ErrNoResourceAvailable
		}
	}
}

func (p *Searcher[T, ID]) arrivals() uint64 {
	var sum uint64
	for i := range p.shards {
		sum += p.shards[i].Arrivals.Load()
	}
	return sum
}
