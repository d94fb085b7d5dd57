package scheduler

import (
	"fmt"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/budget"
	"github.com/crsched/crs/internal/lookup"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/shard"
)

// Add puts a new resource into the pool, active, and hands it to the
// oldest waiter if any. It returns ErrNilResource for a nil value,
// ErrInvalidKey for a key that cannot identify it (see lookup.Usable) and
// ErrDuplicateKey if its key is already present; when the key belongs to
// a resource removed while held, whose holders have not all released yet,
// the error wraps both ErrDuplicateKey and ErrResourceDraining. Limits
// that config.ValidateLimits refuses make it fail with their error
// (ErrInvalidLimit, ErrDuplicateLimit), adding nothing.
func (s *Scheduler[T, ID]) Add(v T) error {
	if s.closed.Load() {
		return crserrors.ErrSchedulerClosed
	}
	if node.IsNil(s.nilness, v) {
		return crserrors.ErrNilResource
	}
	key := s.key(v)
	if s.checkKeys && !lookup.Usable(key) {
		return crserrors.ErrInvalidKey
	}
	limits, err := s.limitsOf(v)
	if err != nil {
		return opError("add", key, err)
	}
	n := &node.Node[T, ID]{Key: key, Index: -1, Shard: int32(s.assign(1)), Capacity: s.capacityOf(v)}
	if limits != nil {
		n.SetBudgets(budget.New(limits, s.now(), 0))
	}
	n.Init(v, s.word)
	id := n.Key
	defer s.affinity.Changed(id) // also after a panic: the ring may have seen n
	served, present := s.add(n)
	yieldTo(served)
	if present != nil {
		// Leaving is set once, and the key stays taken after it is set:
		// read now, set means the key was taken by a draining resource
		// at some instant after the insert failed (finding 5).
		return collision[ID]{id, present.Leaving.Load()}.err("add")
	}
	s.emit(events.EventAdd, id)
	return nil
}

// assign reserves n consecutive shard slots in rotation and returns the
// first; resource i of the reservation goes to shard (first+i) % HeapCount.
func (s *Scheduler[T, ID]) assign(n int) int {
	end := s.assigned.Add(uint64(n))
	return int((end - uint64(n)) % uint64(len(s.shards)))
}

// add inserts n, or returns the node that holds its key.
func (s *Scheduler[T, ID]) add(n *node.Node[T, ID]) (served bool, present *node.Node[T, ID]) {
	sh := &s.shards[n.Shard]
	sh.Lock()
	defer sh.Unlock()
	s.room.Repair(sh, nil)
	if present := sh.Insert(n); present != nil {
		return false, present
	}
	if s.budgeted {
		// Counted in the step that makes n visible: a Remove of it, or a
		// lease's check of the profiles, must never see it uncounted.
		s.profiles.Change(n.Budgets().Limits(), 1)
	}
	return s.room.ServeAfter(sh), nil
}

// collision is a key found taken, and whether the resource holding it
// was draining then: its node.Leaving, which says so without the lock
// of that resource's shard (the failed call may hold another).
type collision[ID comparable] struct {
	key     ID
	leaving bool
}

// err builds the error of op for the collision: ErrDuplicateKey itself,
// as CRS returned it, or, for a draining resource (which CRS did not
// have), an error wrapping it and ErrResourceDraining.
func (c collision[ID]) err(op string) error {
	if c.leaving {
		return fmt.Errorf("%s %v: %w: %w", op, c.key, crserrors.ErrDuplicateKey, crserrors.ErrResourceDraining)
	}
	return crserrors.ErrDuplicateKey
}

// BatchAdd adds all resources or none. It fails, inserting nothing, on a
// nil value (ErrNilResource), on a key that cannot identify a resource
// (ErrInvalidKey), on a key repeated within the batch or
// already present (ErrDuplicateKey). No other goroutine sees part of the
// batch: the shards it touches are locked together, in ascending order,
// while it goes in.
func (s *Scheduler[T, ID]) BatchAdd(vs []T) error {
	if s.closed.Load() {
		return crserrors.ErrSchedulerClosed
	}
	if len(vs) == 0 {
		return nil
	}
	limits, err := s.batchLimits(vs)
	if err != nil {
		return err
	}
	slab, first := s.batchNodes(vs, limits)
	if s.checkKeys {
		for i := range slab {
			if !lookup.Usable(slab[i].Key) {
				return crserrors.ErrInvalidKey
			}
		}
	}
	defer s.affinity.BatchChanged(slab) // also after a failure: the ring may have seen the batch
	served, met, failed := s.batchAdd(slab, first)
	yieldTo(served)
	if failed {
		s.refused(insertFailed)
		return s.batchError(slab, shard.SlabOrder(len(vs), len(s.shards)), met)
	}
	if s.events != nil {
		at := shard.SlabOrder(len(vs), len(s.shards))
		for i := range vs {
			s.emit(events.EventAdd, slab[at(i)].Key)
		}
	}
	return nil
}

// batchLimits checks the values of a batch and returns their limits, if
// the pool has any.
func (s *Scheduler[T, ID]) batchLimits(vs []T) ([][]config.Limit, error) {
	for _, v := range vs {
		if node.IsNil(s.nilness, v) {
			return nil, crserrors.ErrNilResource
		}
	}
	if s.limits == nil && s.rateLimit == nil {
		return nil, nil
	}
	limits := make([][]config.Limit, len(vs))
	for i, v := range vs {
		var err error
		if limits[i], err = s.limitsOf(v); err != nil {
			return nil, opError("batch add", s.key(v), err)
		}
	}
	return limits, nil
}

// batchNodes makes the nodes of a batch, assigned to the shards from
// first on in rotation, in one allocation: the nodes hold the keys, and
// the lookup map takes the slab itself.
func (s *Scheduler[T, ID]) batchNodes(vs []T, limits [][]config.Limit) (slab []node.Node[T, ID], first int) {
	now := s.now()
	slab = make([]node.Node[T, ID], len(vs))
	first = s.assign(len(vs))
	shard.InSlabOrder(len(vs), len(s.shards), func(i, at, offset int) {
		v, n := vs[i], &slab[at]
		n.Key, n.Index, n.Shard = s.key(v), -1, int32(s.search.Wrap(first+offset)) // (first + i) % len(s.shards)
		n.Capacity = s.capacityOf(v)
		if limits != nil {
			n.SetBudgets(budget.New(limits[i], now, 0))
		}
		n.Init(v, s.word)
	})
	return slab, first
}

// batchError says why the batch in slab (item i of the batch at at(i))
// did not go in: the insert met a key taken. A key repeated within the
// batch, wherever it is, makes it ErrDuplicateKey; otherwise the first
// key of the batch found taken decides whether it also wraps
// ErrResourceDraining, as if each key were checked in order up front, at
// one instant; the lookup map may have met them in another order.
func (s *Scheduler[T, ID]) batchError(slab []node.Node[T, ID], at func(int) int, met collision[ID]) error {
	keys := make([]ID, len(slab))
	for i := range keys {
		keys[i] = slab[at(i)].Key
	}
	if lookup.Repeats(keys) {
		return crserrors.ErrDuplicateKey
	}
	// Nothing of the batch is in the map: whatever is found was there
	// before. Not Get: it could meet a key of another batch that is being
	// taken out again, a key that was never in the pool (finding 9). And
	// whether it drains is read with the keys, not after: by then a key
	// before it in the batch may be back (finding 11).
	i, p, leaving := s.nodes.FirstPresent(keys)
	s.refused(lookedUp)
	if p != nil {
		return collision[ID]{keys[i], leaving}.err("batch add")
	}
	// Removed since: report the one the insert met, as it was then.
	return met.err("batch add")
}

func (s *Scheduler[T, ID]) refused(at refusal) {
	if s.hooks.refusing != nil {
		s.hooks.refusing(at)
	}
}

// batchAdd inserts the batch, or reports failed and the first key of it
// the insert found taken.
func (s *Scheduler[T, ID]) batchAdd(slab []node.Node[T, ID], first int) (served bool, met collision[ID], failed bool) {
	// The batch fills shards first, first+1, ... in rotation, so it touches
	// all shards or a contiguous (wrapping) run of them.
	b := shard.Batch{Touched: func(i int) bool {
		return len(slab) >= len(s.shards) || (i-first+len(s.shards))%len(s.shards) < len(slab)
	}}
	defer shard.UnlockBatch(s.shards, &b)
	shard.LockBatch(s.shards, &b, s.repair)
	if i, _, leaving := s.nodes.InsertAll(slab); i >= 0 {
		return false, collision[ID]{slab[i].Key, leaving}, true
	}
	added := shard.AddBatch(s.shards, slab)
	s.pool.Size.Add(int64(len(slab)))
	if s.budgeted { // as in add: in the step that makes the batch visible
		for i := range slab {
			s.profiles.Change(slab[i].Budgets().Limits(), 1)
		}
	}
	return s.room.ServeBatch(added), collision[ID]{}, false
}

// repair is the waiting room's Repair of a whole shard, for LockBatch.
func (s *Scheduler[T, ID]) repair(sh *shard.Shard[T, ID]) { s.room.Repair(sh, nil) }
