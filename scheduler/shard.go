package scheduler

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/heap"
	"github.com/crsched/crs/internal/node"
)

// shard is one independently locked heap and the resources assigned to it.
// A resource belongs to one shard for its whole life, so every transition
// of a resource happens under that shard's lock alone.
//
// Every method below requires mu to be held. Operations change a node's
// bookkeeping first (holders, leases, state counters: no user code), then
// call place, activate or deactivate, which move the node in or out of the
// heap and reorder it. Those run the comparator, which may panic; they
// undo their structural move and leave the shard broken (see broken),
// and the operation's own deferred undo restores the bookkeeping, so a
// panic leaves the node exactly as it was.
type shard[T any, ID comparable] struct {
	mu sync.Mutex

	// Guarded by mu.
	heap     heap.Heap[T, ID]
	held     int
	excluded int
	draining int
	resting  [node.RestKinds]int // resting nodes by why they rest
	holders  int                 // sum of the Holders of this shard's nodes
	// broken is set while the comparator runs under mu and cleared when
	// it returns, so finding it set means that a comparator panicked in
	// an earlier operation: the heap may be out of order (a valid
	// container all the same, see package heap), and a waiter may wait
	// while a resource of this shard is free. The next holder of mu
	// repairs the shard before anything else (see Scheduler.repair).
	broken bool
	// unejected counts the ejections ended by the step that holds mu.
	// pool.ejected counts them until unlock, so that the step's undo
	// can put one back (restoreRest) without exceeding the pool's limit
	// if another shard's failure would meanwhile have taken the slot.
	unejected int64
	// undo is what the step that holds mu saved of the node it changes,
	// for unlock to put back if the comparator panicked (see undo).
	undo undo[T, ID]
	// wakeAt is when the wake armed for this shard's waiters comes due
	// (see Scheduler.wake), 0 if none is.
	wakeAt int64
	// heldBack counts the nodes that only their limits keep from a
	// caller (see shard.heldBack), for Stats.LimitWaits. Written under
	// mu, by setState, setRest and the changes of Holders and Capacity
	// of a resting node; read without it by waiters (see
	// Scheduler.limitsHold).
	heldBack atomic.Int64

	// Set at New, never changed.
	index     int  // in the scheduler's shards
	exclusive bool // the scheduler's policy
	global    bool // GlobalOrder: Acquire compares the tops of all shards
	// peeked: readers without the lock load top (the Shared policy
	// without rate limits, or GlobalOrder). Otherwise publish leaves top
	// alone: an atomic store per acquisition that no one reads.
	peeked bool
	pool   *poolCounts
	now    func() int64 // the scheduler's clock, as deadlines count it
	hooks  *hooks       // the scheduler's
	// emit queues an event for the observers (Scheduler.emit): it never
	// blocks and runs no user code, so it may be called under mu (place,
	// and the operations that call forgetEnded, do).
	emit func(events.EventType, ID)

	// active mirrors heap.Len() and top mirrors heap.Top() (when peeked)
	// for readers that take no lock: ShardView, Acquire skipping empty
	// shards, the Shared policy's lock-free Acquire and GlobalOrder's
	// comparison of shard tops. Written only under mu, by publish.
	active atomic.Int64
	top    atomic.Pointer[node.Node[T, ID]]
	// arrivals counts the times this shard went from no active resource
	// to some. It lets Acquire prove that all shards were empty at one
	// instant before it reports ErrNoResourceAvailable (see
	// Scheduler.take), so publish increments it before it makes the
	// change visible. Arrivals in a shard that has active resources need
	// no count (a sweep does not pass over such a shard), which keeps this
	// write off the hot path.
	arrivals atomic.Uint64
	// version lets readers that take no lock see this shard's top, the
	// top's value and the scheduler's size as they were at one instant.
	// Writers, under mu, make it odd for the span of a change that
	// touches more than one of those (begin, end: Add, BatchAdd, Remove),
	// and while they publish a node's staged value (publishTop, unless a
	// span is open already), since a reader may still hold that node from
	// when it was the top with its old value; and under GlobalOrder they
	// add 2 whenever the top changes, since Acquire there must know that
	// no shard's top changed while it compared them. A reader loads it
	// before and after reading; an odd or changed value means the reading
	// may mix two states (see peek, Scheduler.Len).
	version atomic.Uint64

	// Keeps neighbouring shards in a []shard off each other's cache lines.
	_ [64]byte
}

// poolCounts are the scheduler-wide counts that ejection decisions need
// across shards. They change only on exclusion, inclusion and ejection, so
// keeping them in shared atomics costs the hot path nothing.
type poolCounts struct {
	excluded atomic.Int64
	ejected  atomic.Int64
}

// begin opens a change that readers without the lock must not see in
// part; end closes it. Call end deferred, so that a panic closes it too.
func (s *shard[T, ID]) begin() { s.version.Add(1) }
func (s *shard[T, ID]) end()   { s.version.Add(1) }

// peek returns the shard's top and the top's value as they were at one
// instant, with the shard's version then, or ok false when a writer was
// changing them (the caller then reads under the lock, see
// Scheduler.lockedPeek). It takes no lock.
func (s *shard[T, ID]) peek() (n *node.Node[T, ID], v T, version uint64, ok bool) {
	version = s.version.Load()
	if version&1 != 0 {
		return nil, v, version, false
	}
	if n = s.top.Load(); n != nil {
		v = n.Load()
	}
	return n, v, version, s.version.Load() == version
}

// empty reports, without the lock, whether the shard had no active
// resource at an instant when no change was in progress. The count is
// read first: a change that emptied the shard and was still open when
// the count was read makes the version odd after it.
func (s *shard[T, ID]) empty() bool {
	return s.active.Load() == 0 && s.version.Load()&1 == 0
}

// publish refreshes the lock-free view of the heap: the count of active
// resources and, when readers load it, the top. Each lock-free reader
// reads one of the two (Lease, AcquireContext and the sweeps the count,
// the Shared policy's Acquire the top), so their order matters: a shard
// that empties clears its top before its count says zero, and one that
// fills counts before it shows a top. Otherwise a reader could find the
// shard empty by its count, and a later one still be handed the top that
// just left. It skips stores that would change nothing: an atomic store
// is a locked instruction.
func (s *shard[T, ID]) publish() {
	n := int64(s.heap.Len())
	if n == 0 {
		s.publishTop()
		s.betweenStores()
		s.publishCount(n)
		return
	}
	s.publishCount(n)
	s.betweenStores()
	s.publishTop()
}

func (s *shard[T, ID]) betweenStores() {
	if s.hooks.publishing != nil {
		s.hooks.publishing()
	}
}

// publishCount stores the count of active resources, n.
func (s *shard[T, ID]) publishCount(n int64) {
	if was := s.active.Load(); was != n {
		if was == 0 {
			s.arrivals.Add(1)
		}
		s.active.Store(n)
	}
}

// publishTop stores the heap's top for readers that take no lock, if
// any do, with its value: values are staged while their nodes are not
// the top (see node.Node.Stage), and published here when they become it,
// or change while it.
func (s *shard[T, ID]) publishTop() {
	if !s.peeked {
		return
	}
	t := s.heap.Top()
	if t != nil && t.Stale() {
		// Within a change that has opened a span (Remove, when a node
		// staged earlier becomes the top) that span covers this; a
		// second begin would make the version even before the change
		// is done.
		open := s.version.Load()&1 != 0
		if !open {
			s.begin()
		}
		s.betweenStores()
		t.Publish()
		if !open {
			s.end()
		}
	}
	if s.top.Load() != t {
		s.top.Store(t)
		if s.global {
			s.version.Add(2)
		}
	}
}

// full reports whether every slot of n is taken. Under the Shared policy a
// resource is never full: holders are only counted.
func (s *shard[T, ID]) full(n *node.Node[T, ID]) bool {
	return s.exclusive && n.Holders >= n.Capacity
}

// counter returns the count n is counted in while off the heap, or nil.
func (s *shard[T, ID]) counter(n *node.Node[T, ID]) *int {
	switch n.State {
	case node.Held:
		return &s.held
	case node.Excluded:
		return &s.excluded
	case node.Draining:
		return &s.draining
	case node.Resting:
		return &s.resting[n.Rest]
	}
	return nil
}

// limitsOnly reports whether n rests for its limits alone, with a slot
// free: without limits, a caller could have it now.
func (s *shard[T, ID]) limitsOnly(n *node.Node[T, ID]) bool {
	return n.Rest == node.RateLimited && n.State == node.Resting && !s.full(n)
}

// recount keeps heldBack after a change to n that found limitsOnly(n)
// was.
func (s *shard[T, ID]) recount(n *node.Node[T, ID], was bool) {
	switch now := s.limitsOnly(n); {
	case now && !was:
		s.heldBack.Add(1)
	case was && !now:
		s.heldBack.Add(-1)
	}
}

// setState changes n's state and keeps the per-state counters; the heap
// length is the count of active nodes.
func (s *shard[T, ID]) setState(n *node.Node[T, ID], to node.State) {
	was := s.limitsOnly(n)
	if c := s.counter(n); c != nil {
		*c--
	}
	if n.State == node.Excluded {
		s.pool.excluded.Add(-1)
	}
	n.State = to
	if c := s.counter(n); c != nil {
		*c++
	}
	if to == node.Excluded {
		s.pool.excluded.Add(1)
	}
	s.recount(n, was)
}

// setRest records that n rests until until, for why, and keeps the
// counters. It does not move n: place does. An ejection must have been
// reserved in pool.ejected (see Scheduler.reserveEjection); setRest
// releases the reservation when the ejection ends or is overridden, as
// the step unlocks (see unejected).
func (s *shard[T, ID]) setRest(n *node.Node[T, ID], until int64, why node.Rest) {
	was := s.limitsOnly(n)
	if c := s.counter(n); c != nil {
		*c--
	}
	if n.Rest == node.Ejected && why != node.Ejected {
		s.unejected++
	}
	n.RestUntil, n.Rest = until, why
	if c := s.counter(n); c != nil {
		*c++
	}
	s.recount(n, was)
}

// restoreRest puts back n's rest as an operation saved it before
// changing it, for the operation's undo when user code panics: as
// setRest, and an ejection put back keeps the slot its end had released,
// which the step still holds (unejected), since setRest releases the
// slot of an ejection that it ends but takes none for one that it sets
// (an ejection's slot is taken when it is reserved: reserveEjection).
func (s *shard[T, ID]) restoreRest(n *node.Node[T, ID], until int64, why node.Rest) {
	if why == node.Ejected && n.Rest != node.Ejected {
		s.unejected--
	}
	s.setRest(n, until, why)
}

// unlock ends every step on a shard: it rolls the step back if the
// comparator panicked in it (broken is still set: see undo), and releases
// mu, and with it the ejection slots of the ejections the step ended.
func (s *shard[T, ID]) unlock() {
	if s.undo.n != nil {
		if s.broken {
			s.rollback()
		}
		s.commit()
	}
	if s.unejected != 0 {
		s.pool.ejected.Add(-s.unejected)
		s.unejected = 0
	}
	s.mu.Unlock()
}

// stillResting reports whether n's rest is still running, and forgets a rest
// that has ended.
func (s *shard[T, ID]) stillResting(n *node.Node[T, ID]) bool {
	if n.RestUntil == 0 {
		return false
	}
	if s.now() < n.RestUntil {
		return true
	}
	s.setRest(n, 0, node.NoRest)
	return false
}

// forgetEnded forgets n's suspension or ejection if it is over, and
// reports whether it did. One still on a live node after its end has not
// been reported: place and the timer (expire) forget it as they report
// it. So an operation that replaces or clears n's rest itself (Suspend,
// a cooldown or ejection on a release, Exclude, Include) calls this
// first and, on true, emits EventResume once its step is done, as place
// does; otherwise, with the timer late, the end would go unreported. The
// operation's undo restores the rest (restoreRest).
func (s *shard[T, ID]) forgetEnded(n *node.Node[T, ID]) bool {
	if (n.Rest != node.Suspended && n.Rest != node.Ejected) || s.now() < n.RestUntil {
		return false
	}
	s.setRest(n, 0, node.NoRest)
	return true
}

// limited starts a rest for n's limits if one of its buckets lacks a
// unit now (see limitRest), and reports whether it did. n has no rest.
func (s *shard[T, ID]) limited(n *node.Node[T, ID]) bool {
	next := limitRest(n, s.now())
	if next == 0 {
		return false
	}
	s.setRest(n, next, node.RateLimited)
	return true
}

// activate moves n, off the heap, into the heap. The step must have
// saved n (see undo).
func (s *shard[T, ID]) activate(n *node.Node[T, ID]) {
	s.setState(n, node.Active)
	s.broken = true
	s.heap.Push(n)
	s.broken = false
	s.publish()
}

// deactivate takes active node n out of the heap into state to. The step
// must have saved n (see undo).
func (s *shard[T, ID]) deactivate(n *node.Node[T, ID], to node.State) {
	s.setState(n, to)
	s.broken = true
	if to == node.Held && s.heap.Top() == n {
		// A held node is given back soon, most often before anything
		// else happens to the heap: leave the sift (see heap.New).
		s.heap.Pop()
	} else {
		s.heap.Remove(n)
	}
	s.broken = false
	s.publish()
}

// best returns the heap's top, or nil. The heap may first run the sift a
// Pop left to later (see heap.New), which runs the comparator. Read the
// top only through best.
func (s *shard[T, ID]) best() *node.Node[T, ID] {
	s.broken = true
	t := s.heap.Top()
	s.broken = false
	return t
}

// fix restores the order around active node n after its value or holder
// count changed.
func (s *shard[T, ID]) fix(n *node.Node[T, ID]) {
	s.broken = true
	s.heap.Fix(n)
	s.broken = false
	s.publish()
}

// place puts n where it belongs: resting while its rest runs or, when it
// has a rate limit or budgets, while one of those lacks a unit (the rest
// that this starts, if any, the caller queues, as for any rest that
// place's call changed); held while every slot is taken, otherwise
// active (and in order). So a node in the heap always covers the default
// cost. Excluded and draining nodes stay where they are: those states are
// the operator's decisions and outrank the others. A suspension or
// ejection found over ends here, whoever calls (its timer may come later),
// and is reported then. The step must have saved n (see undo).
func (s *shard[T, ID]) place(n *node.Node[T, ID]) {
	switch n.State {
	case node.Excluded, node.Draining, node.Removed:
		return
	}
	why := n.Rest
	want := node.Active
	switch {
	case s.stillResting(n):
		want = node.Resting
	case n.Metered() && s.limited(n):
		want = node.Resting
	case s.full(n):
		want = node.Held
	}
	switch {
	case n.State == want && want == node.Active:
		s.fix(n)
	case n.State == want:
	case n.State == node.Active:
		s.deactivate(n, want)
	case want == node.Active:
		s.activate(n)
	default:
		s.setState(n, want)
	}
	if (why == node.Suspended || why == node.Ejected) && n.Rest != why {
		s.emit(events.EventResume, n.Key)
	}
}

// order restores the heap order after k nodes were appended: sifting each
// up costs O(k log n), rebuilding the whole heap O(n); take the cheaper.
func (s *shard[T, ID]) order(k int) {
	n := s.heap.Len()
	s.broken = true
	if k*bits.Len(uint(n)) >= n {
		s.heap.Init()
	} else {
		for i := n - k; i < n; i++ {
			s.heap.Up(i)
		}
	}
	s.broken = false
}

// repair brings sh back to normal before an operation uses it. After a
// comparator panicked under its lock in an earlier operation (see
// shard.broken), it orders the heap again, publishes it, and serves the
// waiters the panic may have kept from a resource. It also runs the sift
// that the heap left waiting when an operation took its top out (see
// heap.New), unless only is that node: an operation that changes only
// the node it names, off the heap, may leave the sift waiting, so that
// giving the top back costs no sift (the common exclusive use). Any
// other change must come after the sift, which compares by the values it
// finds. Every operation calls repair right after locking sh, with the
// unlock deferred: it runs the comparator, which may panic and leave sh
// broken.
func (s *Scheduler[T, ID]) repair(sh *shard[T, ID], only *node.Node[T, ID]) {
	if sh.broken {
		sh.heap.Init()
		sh.broken = false
		sh.publish()
		s.serve(sh)
	}
	if t := sh.heap.Waiting(); t != nil && t != only {
		sh.best()
	}
}
