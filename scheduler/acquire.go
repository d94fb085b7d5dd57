package scheduler

import (
	"context"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/shard"
	"github.com/crsched/crs/internal/waiting"
)

// Acquire returns the best resource of the shard the strategy selects, or,
// when that shard is empty, of the next non-empty shard after it. Under the
// Shared policy the resource stays active; under Exclusive it takes one of
// the resource's slots until Release. It returns ErrNoResourceAvailable
// when no resource is active and ErrInvalidAcquireStrategy when the
// strategy returns an index out of range. AcquireContext waits instead.
func (s *Scheduler[T, ID]) Acquire() (T, error) {
	var zero T
	if s.closed.Load() { // begin, written out: see below
		return zero, crserrors.ErrSchedulerClosed
	}
	start, err := s.strategyStart()
	if err != nil {
		return zero, err
	}
	if s.lockFree && !s.global {
		// A shared acquisition changes nothing: the first published top
		// is the answer, read with no lock and no write. This is the
		// request's first sweep, written out here because a shared
		// Acquire measured slower through the calls.
		for i := range len(s.shards) {
			sh := &s.shards[s.wrap(start+i)]
			n, v, _, ok := sh.Peek()
			if !ok {
				n, v, _ = s.lockedPeek(sh)
			}
			if n != nil {
				s.acquired(n)
				return v, nil
			}
		}
	}
	g := waiting.Grant[T, ID]{Tenant: s.defTenant}
	err = s.request(noWait, start, nil, false, &g)
	return g.Value, err
}

// AcquireByAffinity returns the resource that id maps to, so that the same
// identifier keeps getting the same resource while that resource is
// available, whatever the priorities do. While it is not (held, resting,
// excluded, removed), the identifier gets the next available resource in
// an order fixed by the identifier, so the fallback is deterministic too.
// Identifiers spread evenly over the resources. Priority plays no part,
// except when no resource in the identifier's order is available, when it
// returns the best available like Acquire.
func (s *Scheduler[T, ID]) AcquireByAffinity(id acquire.AffinityIdentifier) (T, error) {
	g := waiting.Grant[T, ID]{Tenant: s.defTenant}
	if id == nil { // before the closed flag, as CRS checked them
		return g.Value, crserrors.ErrNilAffinityIdentifier
	}
	start, err := s.begin(id)
	if err == nil {
		err = s.request(noWait, start, id, false, &g)
	}
	return g.Value, err
}

// begin is the start of every acquisition: it checks that the scheduler
// is open and asks the strategy for the shard to start from (an affinity
// identifier needs none: its candidates come first, then shard 0 on).
func (s *Scheduler[T, ID]) begin(id acquire.AffinityIdentifier) (int, error) {
	if s.closed.Load() {
		return 0, crserrors.ErrSchedulerClosed
	}
	if id != nil {
		return 0, nil
	}
	return s.strategyStart()
}

// noWait is the context of an acquisition that does not wait: none.
var noWait context.Context

// request is the one path of every acquisition after begin: Acquire's
// and AcquireByAffinity's (ctx noWait), AcquireContext's,
// Lease's and their affinity forms' (they wait until ctx ends). It takes
// a hold into g, for the cost g.Cost and as a lease if lease is set.
// The fast case, a resource available and nobody ahead in the order of
// service, is the if at its top. (The grant goes into g, down the calls,
// rather than back up as a result: a struct returned through three calls
// is copied at each, which was slow enough to matter.)
func (s *Scheduler[T, ID]) request(ctx context.Context, start int, id acquire.AffinityIdentifier, lease bool, g *waiting.Grant[T, ID]) error {
	if !s.room.MustQueue(g) && s.search(start, id, lease, g) {
		return nil
	}
	if ctx != noWait {
		var err error
		*g, err = s.room.Wait(ctx, start, id, lease, waiting.Grant[T, ID]{Cost: g.Cost, Tenant: g.Tenant, Priority: g.Priority})
		return err
	}
	if s.room.MustQueue(g) {
		return crserrors.ErrNoResourceAvailable // the strict order (see waiting.Room.MustQueue)
	}
	return s.proveEmpty(start, lease, g)
}

// search takes a hold: for id, on the resource it maps to or the next
// available in its order, else (and without id) on the best of the
// shard the strategy picked, or of the next non-empty shards.
func (s *Scheduler[T, ID]) search(start int, id acquire.AffinityIdentifier, lease bool, g *waiting.Grant[T, ID]) bool {
	return id != nil && s.sweepAffinity(id, lease, g) || s.sweep(start, lease, g)
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
func (s *Scheduler[T, ID]) proveEmpty(start int, lease bool, g *waiting.Grant[T, ID]) error {
	for {
		before := s.arrivals()
		if s.sweep(start, lease, g) {
			return nil
		}
		if s.arrivals() == before {
			return crserrors.ErrNoResourceAvailable
		}
	}
}

func (s *Scheduler[T, ID]) arrivals() uint64 {
	var sum uint64
	for i := range s.shards {
		sum += s.shards[i].Arrivals.Load()
	}
	return sum
}

// sweep takes a hold (see hold) on the best resource of the first
// non-empty shard at or after start, or with GlobalOrder on the best
// resource of all shards (ties going to the first from start). A cost
// (g.Cost) goes to the best resource that covers it (see shard.Shard.Covering) of
// the first shard that has one, or with GlobalOrder of all shards. Where a
// shared acquisition changes nothing (lockFree), it reads the shard's
// published top instead, with no lock. It reports whether it found one.
func (s *Scheduler[T, ID]) sweep(start int, lease bool, g *waiting.Grant[T, ID]) bool {
	if s.global {
		if g.Cost != nil {
			return s.sweepGlobalCost(start, lease, g)
		}
		return s.sweepGlobal(start, lease, g)
	}
	for i := range len(s.shards) {
		sh := &s.shards[s.wrap(start+i)]
		if s.lockFree && !lease {
			if n, v, _ := s.read(sh); n != nil {
				g.Node, g.Value = n, v
				s.acquired(n)
				return true
			}
			continue
		}
		if !sh.Empty() && s.holdTop(sh, nil, 0, lease, g) {
			s.acquired(g.Node)
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
func (s *Scheduler[T, ID]) sweepGlobal(start int, lease bool, g *waiting.Grant[T, ID]) bool {
	for {
		idx, n, v, seen := s.bestTop(start)
		if n == nil {
			return false
		}
		if s.lockFree && !lease {
			if now, _ := s.versions(); now == seen {
				g.Node, g.Value = n, v
				s.acquired(n)
				return true
			}
			continue
		}
		if s.holdTop(&s.shards[idx], n, seen, lease, g) {
			s.acquired(n)
			return true
		}
		if g.Tenant != nil && g.Tenant.Budgets != nil {
			// Refused by its tenant's budgets, perhaps, not by another
			// caller's change: looking again would find the same.
			if ok, _ := s.room.TenantCovers(g.Tenant, g.Cost); !ok {
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
func (s *Scheduler[T, ID]) sweepGlobalCost(start int, lease bool, g *waiting.Grant[T, ID]) bool {
	for range 3 {
		var best *node.Node[T, ID]
		var bestValue T
		for i := range len(s.shards) {
			sh := &s.shards[s.wrap(start+i)]
			if sh.Empty() {
				continue
			}
			n, v := s.coveringIn(sh, g.Cost)
			if n != nil && (best == nil || s.cmp(v, bestValue) < 0) {
				best, bestValue = n, v
			}
		}
		if best == nil {
			return false
		}
		if s.holdNode(best, lease, g) {
			s.acquired(best)
			return true
		}
	}
	for i := range len(s.shards) {
		if sh := &s.shards[s.wrap(start+i)]; !sh.Empty() && s.holdTop(sh, nil, 0, lease, g) {
			s.acquired(g.Node)
			return true
		}
	}
	return false
}

// coveringIn returns sh's best resource that covers cost (see shard.Shard.Covering)
// and its value, or nil.
func (s *Scheduler[T, ID]) coveringIn(sh *shard.Shard[T, ID], cost config.Cost) (n *node.Node[T, ID], v T) {
	sh.Lock()
	defer sh.Unlock()
	s.room.Repair(sh, nil)
	if n, _ = sh.Covering(cost, s.now()); n != nil {
		v = n.Value
	}
	return n, v
}

// bestTop returns the shard whose top is best, that top and its value,
// and the sum of the shards' versions at the moments their tops were
// read; ties go to the first shard at or after start, so the strategy
// spreads callers among equally good resources.
func (s *Scheduler[T, ID]) bestTop(start int) (bestIdx int, best *node.Node[T, ID], bestValue T, versions uint64) {
	bestIdx = -1
	for i := range len(s.shards) {
		idx := s.wrap(start + i)
		n, v, version := s.read(&s.shards[idx])
		versions += version
		if n == nil {
			continue
		}
		if best == nil || s.cmp(v, bestValue) < 0 {
			bestIdx, best, bestValue = idx, n, v
		}
	}
	return bestIdx, best, bestValue, versions
}

// read returns sh's top and its value as they were at one instant, with
// sh's version then. It takes no lock unless a writer is busy, and then
// waits for it under the lock rather than spin.
func (s *Scheduler[T, ID]) read(sh *shard.Shard[T, ID]) (*node.Node[T, ID], T, uint64) {
	if n, v, version, ok := sh.Peek(); ok {
		return n, v, version
	}
	return s.lockedPeek(sh)
}

func (s *Scheduler[T, ID]) lockedPeek(sh *shard.Shard[T, ID]) (n *node.Node[T, ID], v T, version uint64) {
	sh.Lock()
	defer sh.Unlock()
	s.room.Repair(sh, nil)
	if n = sh.Best(); n != nil {
		v = n.Value
	}
	return n, v, sh.Version.Load()
}

// holdTop takes a hold on the top of sh, into g; with want set, only if
// want is still the top and the shards' versions still sum to versions
// (see sweepGlobal). It reports whether it took one.
func (s *Scheduler[T, ID]) holdTop(sh *shard.Shard[T, ID], want *node.Node[T, ID], versions uint64, lease bool, g *waiting.Grant[T, ID]) bool {
	sh.Lock()
	defer sh.Unlock()
	s.room.Repair(sh, nil)
	n := sh.Best()
	if n == nil {
		return false
	}
	if g.Cost != nil {
		if n, _ = sh.Covering(g.Cost, s.now()); n == nil {
			return false
		}
	}
	if want != nil {
		if now, _ := s.versions(); n != want || now != versions {
			return false
		}
	}
	if g.Tenant == nil && g.Priority == 0 && !s.room.Fair() {
		s.hold(sh, n, lease, g) // grant's first case, without its call
		return true
	}
	return s.grant(sh, n, lease, g)
}

// strategyStart asks the strategy for the first shard to look in, and
// checks the shard it names. The default strategy, the scheduler's own
// rotation, is asked without the interface: it is kept because a shared
// Acquire measured more than a tenth faster that way.
func (s *Scheduler[T, ID]) strategyStart() (int, error) {
	if s.strategy == nil {
		return s.rotation.next(len(s.shards)), nil
	}
	start := s.strategy.Select(s.view)
	if start < 0 || start >= len(s.shards) {
		return 0, crserrors.ErrInvalidAcquireStrategy
	}
	return start, nil
}

// shardView is the scheduler seen as an acquire.ShardView. It is a
// conversion of the scheduler pointer, so passing it to a strategy as an
// interface does not allocate.
type shardView[T any, ID comparable] Scheduler[T, ID]

func (v *shardView[T, ID]) ShardCount() int { return len(v.shards) }

func (v *shardView[T, ID]) ActiveCount(i int) int {
	if i < 0 || i >= len(v.shards) {
		return 0
	}
	return int(v.shards[i].Active.Load())
}
