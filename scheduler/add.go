package scheduler

import (
	"fmt"

	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/node"
)

// Add puts a new resource into the pool, active, and hands it to the
// oldest waiter if any. It returns ErrNilResource for a nil value and
// ErrDuplicateKey if its key is already present (wrapping
// ErrResourceDraining too when the key belongs to a resource removed while
// held, whose holders have not all released yet).
func (s *Scheduler[T, ID]) Add(v T) error {
	if s.closed.Load() {
		return crserrors.ErrSchedulerClosed
	}
	if s.isNil(v) {
		return fmt.Errorf("add: %w", crserrors.ErrNilResource)
	}
	n := &node.Node[T, ID]{Key: s.key(v), Index: -1, Shard: s.place(1), Capacity: s.capacityOf(v)}
	n.SetBucket(s.bucketOf(v))
	n.Init(v, s.word, nil)
	id := n.Key
	served, present := s.add(n)
	yieldTo(served)
	if present != nil {
		return duplicate("add", id, present)
	}
	s.emit(events.EventAdd, id)
	return nil
}

// place reserves n consecutive shard slots in rotation and returns the
// first; resource i of the reservation goes to shard (first+i) % HeapCount.
func (s *Scheduler[T, ID]) place(n int) int {
	end := s.placed.Add(uint64(n))
	return int((end - uint64(n)) % uint64(len(s.shards)))
}

// slabOrder returns where in a slab of n nodes, assigned to shards in
// rotation, the i-th goes: grouped by shard, so that nodes next to each
// other in memory belong to one shard. A node is not a whole number of
// cache lines, so otherwise nodes of different shards would share lines,
// and goroutines working in different shards would write to one line
// (false sharing).
func slabOrder(n, shards int) func(i int) int {
	return func(i int) int {
		// The nodes with i % shards == r go to one shard; there are
		// n/shards of them, plus one if r < n%shards. Those of every
		// smaller r come first.
		r := i % shards
		return r*(n/shards) + min(r, n%shards) + i/shards
	}
}

// add inserts n, or returns the node that holds its key.
func (s *Scheduler[T, ID]) add(n *node.Node[T, ID]) (served bool, present *node.Node[T, ID]) {
	sh := &s.shards[n.Shard]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s.mend(sh)
	sh.begin()
	defer sh.end()
	// The node is in the map before it is in the heap, but only while this
	// shard's lock is held: anyone who finds it must take the lock, and by
	// then it is either fully active or rolled back to Removed.
	if present, ok := s.nodes.Insert(n.Key, n); !ok {
		return false, present
	}
	done := false
	defer func() {
		if !done {
			s.nodes.Delete(n.Key)
			s.membershipChanged() // an affinity table built meanwhile may hold n
		}
	}()
	sh.activate(n)
	done = true
	s.size.Add(1)
	s.membershipChanged()
	return s.serve(sh), nil
}

// duplicate builds the error for a key found taken by present, saying
// whether present drains. present may sit in another shard, whose lock
// the failed call does not hold; node.Leaving says why without it.
func duplicate[T any, ID comparable](op string, key ID, present *node.Node[T, ID]) error {
	if present.Leaving.Load() {
		return fmt.Errorf("%s %v: %w: %w", op, key, crserrors.ErrDuplicateKey, crserrors.ErrResourceDraining)
	}
	return opError(op, key, crserrors.ErrDuplicateKey)
}

// BatchAdd adds all resources or none. It fails, inserting nothing, on a
// nil value (ErrNilResource), on a key repeated within the batch or
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
	keys := make([]ID, len(vs))
	for i, v := range vs {
		if s.isNil(v) {
			return fmt.Errorf("batch add: item %d: %w", i, crserrors.ErrNilResource)
		}
		keys[i] = s.key(v)
	}

	// One allocation for all nodes of the batch, and one for the copies
	// of their values that lock-free readers load, if T needs copies.
	slab := make([]node.Node[T, ID], len(vs))
	nodes := make([]*node.Node[T, ID], len(vs))
	var copies []T
	if !s.word {
		copies = make([]T, len(vs))
	}
	first := s.place(len(vs))
	shard := first
	at := slabOrder(len(vs), len(s.shards))
	for i, v := range vs {
		n := &slab[at(i)]
		n.Key, n.Index, n.Shard = keys[i], -1, shard
		n.Capacity = s.capacityOf(v)
		n.SetBucket(s.bucketOf(v))
		var spare *T
		if copies != nil {
			spare = &copies[i]
		}
		n.Init(v, s.word, spare)
		nodes[i] = n
		if shard++; shard == len(s.shards) {
			shard = 0
		}
	}
	served, dup, present := s.batchAdd(keys, nodes, first)
	yieldTo(served)
	if dup >= 0 {
		// The lookup map stops at repeats within the batch too, so that a
		// batch that goes in never pays for a set of its keys; the error
		// names a repeat first, wherever it is, as if checked up front.
		if i, ok := firstRepeat(keys); ok {
			return fmt.Errorf("batch add: item %d: key %v repeated in the batch: %w", i, keys[i], crserrors.ErrDuplicateKey)
		}
		return duplicate("batch add", keys[dup], present)
	}
	for _, k := range keys {
		s.emit(events.EventAdd, k)
	}
	return nil
}

// firstRepeat returns the index of the first key that repeats an earlier
// one, if any.
func firstRepeat[ID comparable](keys []ID) (int, bool) {
	seen := make(map[ID]struct{}, len(keys))
	for i, k := range keys {
		if _, ok := seen[k]; ok {
			return i, true
		}
		seen[k] = struct{}{}
	}
	return 0, false
}

// batchAdd inserts the batch, or returns the index of a key already
// present (-1 on success) and the node that holds it.
func (s *Scheduler[T, ID]) batchAdd(keys []ID, nodes []*node.Node[T, ID], first int) (served bool, dup int, present *node.Node[T, ID]) {
	// The batch fills shards first, first+1, ... in rotation, so it touches
	// all shards or a contiguous (wrapping) run of them.
	touched := func(i int) bool {
		return len(nodes) >= len(s.shards) || (i-first+len(s.shards))%len(s.shards) < len(nodes)
	}
	for i := range s.shards {
		if touched(i) {
			s.shards[i].mu.Lock()
			defer s.shards[i].mu.Unlock()
		}
	}
	for i := range s.shards {
		if touched(i) {
			s.mend(&s.shards[i])
			s.shards[i].begin()
			defer s.shards[i].end()
		}
	}
	if dup, present := s.nodes.InsertAll(keys, nodes); dup >= 0 {
		return false, dup, present
	}
	done := false
	defer func() {
		if !done {
			s.undoBatch(keys, nodes)
		}
	}()
	added := make([]int, len(s.shards))
	for _, n := range nodes {
		added[n.Shard]++
	}
	for i, k := range added {
		if k > 0 {
			s.shards[i].heap.Grow(k)
		}
	}
	for _, n := range nodes {
		s.shards[n.Shard].heap.Append(n)
		n.State = node.Active
	}
	for i, k := range added {
		if k > 0 {
			s.shards[i].order(k)
		}
	}
	for i, k := range added {
		if k > 0 {
			s.shards[i].publish()
		}
	}
	done = true
	s.size.Add(int64(len(nodes)))
	s.membershipChanged()
	for i, k := range added {
		if k > 0 && s.serve(&s.shards[i]) {
			served = true
		}
	}
	return served, -1, nil
}

// undoBatch takes a half-inserted batch out again after a comparator
// panic. It runs with the batch's shard locks held and calls no user code;
// the shards stay marked for reordering.
func (s *Scheduler[T, ID]) undoBatch(keys []ID, nodes []*node.Node[T, ID]) {
	for _, n := range nodes {
		if n.Index >= 0 {
			sh := &s.shards[n.Shard]
			sh.heap.Delete(n.Index)
			sh.publish()
		}
		n.State = node.Removed
	}
	s.nodes.DeleteAll(keys)
	s.membershipChanged() // an affinity table built meanwhile may hold the batch
}
