package scheduler

import (
	"fmt"
	"maps"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/budget"
	"github.com/crsched/crs/internal/deadline"
	"github.com/crsched/crs/internal/node"
)

// CheckInvariants verifies the state model of docs/ARCHITECTURE.md with
// every shard locked (ascending, as BatchAdd does), so it sees one
// consistent moment. It repairs a heap left out of order by a panicking
// comparator first, as the next operation on that shard would.
func (s *Scheduler[T, ID]) CheckInvariants() error {
	for i := range s.shards {
		s.shards[i].Lock()
		defer s.shards[i].Unlock()
	}
	for i := range s.shards {
		s.room.Repair(&s.shards[i], nil)
		s.shards[i].Best() // runs a sift that waits, as the next operation would
	}
	inHeap := 0
	for si := range s.shards {
		sh := &s.shards[si]
		h := &sh.Heap
		if sh.Unejected() != 0 {
			return fmt.Errorf("shard %d: %d ejection slots released by a step that has ended still held", si, sh.Unejected())
		}
		if v := sh.Version.Load(); v&1 != 0 {
			return fmt.Errorf("shard %d: a change never ended (version %d is odd)", si, v)
		}
		if got := int(sh.Active.Load()); got != h.Len() {
			return fmt.Errorf("shard %d publishes %d active, heap holds %d", si, got, h.Len())
		}
		if top := h.Top(); sh.Peeked && top != nil && top.Stale() {
			return fmt.Errorf("shard %d: readers without the lock see the top, %v, with a value it no longer has", si, top.Key)
		}
		for i := 0; i < h.Len(); i++ {
			n := h.At(i)
			if int(n.Index) != i || n.State != node.Active || int(n.Shard) != si {
				return fmt.Errorf("shard %d heap[%d]: node %v has index %d, state %v, shard %d", si, i, n.Key, n.Index, n.State, n.Shard)
			}
			if i > 0 && h.Less(n, h.At((i-1)/2)) { // by value, then holders
				return fmt.Errorf("shard %d heap order broken at %d", si, i)
			}
			if m, ok := s.nodes.Get(n.Key); !ok || m != n {
				return fmt.Errorf("shard %d heap holds %v, which the map does not map to it", si, n.Key)
			}
		}
		inHeap += h.Len()
	}
	type tally struct {
		held, excluded, draining, holders, heldBack int
		resting                                     [node.RestKinds]int
	}
	counted := make([]tally, len(s.shards))
	var err error
	total, draining := 0, 0
	s.nodes.Range(func(k ID, n *node.Node[T, ID]) {
		total++
		if err == nil {
			err = s.checkNode(k, n)
		}
		c := &counted[n.Shard]
		c.holders += int(n.Holders)
		if s.shards[n.Shard].LimitsOnly(n) {
			c.heldBack++
		}
		switch n.State {
		case node.Held:
			c.held++
		case node.Excluded:
			c.excluded++
		case node.Draining:
			c.draining++
			draining++
		case node.Resting:
			c.resting[n.Rest]++
		}
	})
	if err != nil {
		return err
	}
	off := 0
	for si := range s.shards {
		sh := &s.shards[si]
		want := tally{sh.Held, sh.Excluded, sh.Draining, sh.Holders, int(sh.HeldBack.Load()), sh.Resting}
		if counted[si] != want {
			return fmt.Errorf("shard %d counts %+v; its nodes add up to %+v", si, want, counted[si])
		}
		off += sh.Held + sh.Excluded + sh.Draining
		for _, r := range sh.Resting {
			off += r
		}
	}
	if s.budgeted {
		present := map[string]int{}
		s.nodes.Range(func(_ ID, n *node.Node[T, ID]) {
			if n.State != node.Draining {
				present[budget.ProfileKey(n.Budgets().Limits())]++
			}
		})
		if counted := s.profiles.Counts(); !maps.Equal(counted, present) {
			return fmt.Errorf("profiles count %v; the resources present add up to %v", counted, present)
		}
	}
	ejected, excluded := 0, 0
	s.nodes.Range(func(_ ID, n *node.Node[T, ID]) {
		if n.Rest == node.Ejected {
			ejected++
		}
		if n.State == node.Excluded {
			excluded++
		}
	})
	if got := int(s.pool.Ejected.Load()); got != ejected {
		return fmt.Errorf("pool counts %d ejected, nodes %d", got, ejected)
	}
	if got := int(s.pool.Excluded.Load()); got != excluded {
		return fmt.Errorf("pool counts %d excluded, nodes %d", got, excluded)
	}
	if total != inHeap+off {
		return fmt.Errorf("map holds %d nodes, heaps %d and off-heap %d", total, inHeap, off)
	}
	if got := s.Len(); got != total-draining {
		return fmt.Errorf("Len = %d, but the map holds %d live nodes", got, total-draining)
	}
	// With budgets, callers wait while the resources in the heap do not
	// cover the oldest one's cost.
	if q := s.room.Len(); q > 0 && s.policy == config.Exclusive && inHeap > 0 && !s.budgeted {
		return fmt.Errorf("%d waiters wait while %d resources are acquirable", q, inHeap)
	}
	return s.checkExpiry()
}

// checkExpiry verifies the deadlines' marks: each dropped mark stands
// for an entry in the queue, and every deadline still to come (a lease's,
// a rest's) has an entry in the queue that is not marked. Requires every
// shard lock.
func (s *Scheduler[T, ID]) checkExpiry() error {
	return s.deadlines.Check(func(yield func(int64, deadline.Entry[*node.Node[T, ID]])) {
		s.nodes.Range(func(_ ID, n *node.Node[T, ID]) {
			yield(n.RestUntil, restEnd(n))
			for _, l := range n.Leases() {
				yield(l.Deadline, leaseEnd(n, l.Token))
			}
		})
	})
}

// checkNode verifies one node's own invariants. Requires its shard lock.
func (s *Scheduler[T, ID]) checkNode(k ID, n *node.Node[T, ID]) error {
	sh := &s.shards[n.Shard]
	switch {
	case n.Key != k:
		return fmt.Errorf("map key %v holds node %v", k, n.Key)
	case n.State == node.Removed:
		return fmt.Errorf("map holds removed node %v", k)
	case (n.State == node.Active) != (n.Index >= 0):
		return fmt.Errorf("node %v is %v at heap index %d", k, n.State, n.Index)
	case n.State == node.Active && sh.Heap.At(int(n.Index)) != n:
		return fmt.Errorf("node %v not at its heap index", k)
	case n.Anonymous() < 0:
		return fmt.Errorf("node %v: %d holders, fewer than its %d leases", k, n.Holders, len(n.Leases()))
	case !n.LeaseIndexConsistent():
		return fmt.Errorf("node %v: lease index out of step with its leases", k)
	case n.Capacity < 1:
		return fmt.Errorf("node %v has capacity %d", k, n.Capacity)
	case n.State == node.Active && sh.Full(n):
		return fmt.Errorf("node %v is active with every slot taken", k)
	case n.State == node.Held && !sh.Full(n):
		return fmt.Errorf("node %v is held with a free slot", k)
	case n.State == node.Draining && n.Holders == 0:
		return fmt.Errorf("node %v drains with no holders", k)
	case (n.State == node.Draining) != n.Leaving.Load():
		return fmt.Errorf("node %v is %v, marked leaving: %v", k, n.State, n.Leaving.Load())
	case !sh.Exclusive && n.Anonymous() != 0:
		return fmt.Errorf("node %v has anonymous holds under the Shared policy", k)
	case n.State == node.Resting && (n.RestUntil == 0 || n.Rest == node.NoRest):
		return fmt.Errorf("node %v rests with no rest (until %d, %v)", k, n.RestUntil, n.Rest)
	case (n.RestUntil == 0) != (n.Rest == node.NoRest):
		return fmt.Errorf("node %v rests until %d for %v", k, n.RestUntil, n.Rest)
	case n.State == node.Resting && n.RestUntil <= s.now() && n.Rest != node.NoRest && !s.expiryPending(n):
		return fmt.Errorf("node %v still rests after its rest ended, with no timer to end it", k)
	case (n.State == node.Active || n.State == node.Held) && n.RestUntil != 0:
		// place forgets a rest that ended before it makes a node active
		// or held, so the lean hold and release paths need not look.
		return fmt.Errorf("node %v is %v with a rest until %d", k, n.State, n.RestUntil)
	}
	return s.checkBudgets(k, n)
}

// checkBudgets verifies a node's budgets: a node in the heap, or held,
// has at least a unit in each (so it covers the default cost), and its
// heap key FullAt is when its tightest bucket is full again, exactly,
// unless every bucket is full now (then it is in the past).
func (s *Scheduler[T, ID]) checkBudgets(k ID, n *node.Node[T, ID]) error {
	now := s.now()
	qs := n.Budgets()
	if len(qs) == 0 {
		if n.FullAt() != 0 {
			return fmt.Errorf("node %v has no budget and FullAt %d", k, n.FullAt())
		}
		return nil
	}
	for i := range qs {
		if (n.State == node.Active || n.State == node.Held) && qs[i].Bucket.Level(now) < 1 {
			return fmt.Errorf("node %v is %v with %d units of %q", k, n.State, qs[i].Bucket.Level(now), qs[i].Name)
		}
		for j := range i {
			if qs[j].Name == qs[i].Name {
				return fmt.Errorf("node %v has two buckets %q", k, qs[i].Name)
			}
		}
	}
	if want := qs.FullAt(now); (want > now && n.FullAt() != want) || (want <= now && n.FullAt() > now) {
		return fmt.Errorf("node %v: FullAt %d, its buckets are full at %d (now %d)", k, n.FullAt(), want, now)
	}
	return nil
}

// Busy reports whether a reader without the lock would find shard i in
// the middle of a change (and wait for it under the lock).
func (s *Scheduler[T, ID]) Busy(i int) bool {
	_, _, _, ok := s.shards[i].Peek()
	return !ok
}

// Peek reads shard i's top and its value the way a lock-free reader does;
// ok is false when the shard is empty or busy (see Busy).
func (s *Scheduler[T, ID]) Peek(i int) (v T, ok bool) {
	n, v, _, ok := s.shards[i].Peek()
	return v, ok && n != nil
}

// StateOf returns the state name of the resource with key id ("absent"
// when there is none).
func (s *Scheduler[T, ID]) StateOf(id ID) string {
	n, sh := s.find(id)
	if n == nil {
		return "absent"
	}
	sh.Lock()
	defer sh.Unlock()
	return n.State.String()
}

// expiryPending reports whether a rest-end entry for n is queued.
func (s *Scheduler[T, ID]) expiryPending(n *node.Node[T, ID]) bool {
	return s.deadlines.Pending(restEnd(n))
}

// LockedPeek reads shard i's top and its value the way a lock-free reader
// does when it finds a writer busy: under the lock.
func (s *Scheduler[T, ID]) LockedPeek(i int) (T, bool) {
	n, v, _ := s.search.LockedPeek(&s.shards[i])
	return v, n != nil
}

// ExpiryQueueLen is the number of entries in the expiry queue, live or
// not yet dropped.
func (s *Scheduler[T, ID]) ExpiryQueueLen() int {
	return s.deadlines.Len()
}

// setHooks sets the scheduler's test hooks (see hooks): before the calls
// they watch, or under the lock that the hooked code holds.
func (s *Scheduler[T, ID]) setHooks(h hooks) {
	s.hooks = h
	s.room.Hook = h.waiting
	for i := range s.shards {
		s.shards[i].Publishing = h.publishing
	}
}
