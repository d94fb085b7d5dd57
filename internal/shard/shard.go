// Package shard is one independently locked heap of resources and every
// change of their state: where a node belongs (Place), how it enters and
// leaves the heap (Activate, Deactivate), its rests, the shard's counts,
// the lock-free view readers without the lock see (Publish, Peek), and
// the one undo log that rolls a step back when the comparator panics
// (Save, Commit; Unlock rolls back).
//
//	sh.Lock()
//	defer sh.Unlock()
//	sh.Save(n, 0)
//	resumed := sh.Place(n, now)
//	sh.Commit()
//
// A shard knows no scheduler: the time comes in as an argument, and what
// should be reported (a rest that ended) comes back as a result, for the
// caller to report.
package shard

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/heap"
	"github.com/crsched/crs/internal/lookup"
	"github.com/crsched/crs/internal/node"
)

// Shard is one independently locked heap and the resources assigned to
// it. A resource belongs to one shard for its whole life, so every
// transition of a resource happens under that shard's lock alone.
//
// Every method but Lock, TryLock, Peek and Empty requires the lock.
// A step locks the shard, saves the node it will change (Save), changes
// its bookkeeping (holders, budgets, state counters: no user code), then
// calls Place, Activate, Deactivate or Fix, which move the node in or
// out of the heap and reorder it, and commits (Commit). Those run the
// comparator, which may panic: the shard is then left broken and Unlock
// puts the saved node back (see undo), so a panic leaves the node
// exactly as it was.
type Shard[T any, ID comparable] struct {
	mu sync.Mutex

	// Guarded by mu.
	Heap     heap.Heap[T, ID]
	Held     int
	Excluded int
	Draining int
	Resting  [node.RestKinds]int // resting nodes by why they rest
	Holders  int                 // sum of the Holders of this shard's nodes
	// risks counts the stretches of code running under mu that may
	// panic half way (Risk, Safe): the comparator's calls, and a step's
	// part that calls it. Finding it above zero (Broken) means that a
	// panic came: the heap may be out of order (a valid container all
	// the same, see package heap), and a waiter may wait while a
	// resource of this shard is free. Unlock rolls the step back; the
	// next holder of mu repairs the shard before anything else.
	risks int
	// unejected counts the ejections ended by the step that holds mu.
	// The pool's Ejected counts them until Unlock, so that the step's
	// undo can put one back (restoreRest) without exceeding the pool's
	// limit if another shard's failure would meanwhile have taken the
	// slot.
	unejected int64
	// undo is what the step that holds mu saved of the node it changes,
	// for Unlock to put back if the comparator panicked (see undo).
	undo undo[T, ID]
	// passes numbers the passes of the givers that serve waiters from
	// this shard (see Pass).
	passes uint64
	// WakeAt is when the wake armed for this shard's waiters comes due,
	// 0 if none is.
	WakeAt int64
	// HeldBack counts the nodes that only their limits keep from a
	// caller (see LimitsOnly), for Stats.LimitWaits. Written under mu,
	// by SetState, SetRest and Recount; read without it by waiters.
	HeldBack atomic.Int64

	// Set by Init, never changed.
	Index     int  // in the scheduler's shards
	Exclusive bool // the scheduler's policy
	Global    bool // GlobalOrder: Acquire compares the tops of all shards
	// Peeked: readers without the lock load Top (the Shared policy
	// without rate limits, or GlobalOrder). Otherwise Publish leaves Top
	// alone: an atomic store per acquisition that no one reads.
	Peeked bool
	pool   *Pool
	// nodes maps the scheduler's resources by key; the undo of a step
	// that put a node into it takes the node out again.
	nodes *lookup.Map[T, ID]
	// Publishing, a test seam (nil outside tests), runs in Publish,
	// under mu, wherever a reader without the lock may look between two
	// of its stores.
	Publishing func()

	// Active mirrors Heap.Len() and Top mirrors Heap.Top() (when Peeked)
	// for readers that take no lock: a strategy's view, Acquire skipping
	// empty shards, the Shared policy's lock-free Acquire and
	// GlobalOrder's comparison of shard tops. Written only under mu, by
	// Publish.
	Active atomic.Int64
	Top    atomic.Pointer[node.Node[T, ID]]
	// Arrivals counts the times this shard went from no active resource
	// to some. It lets Acquire prove that all shards were empty at one
	// instant before it reports ErrNoResourceAvailable, so Publish
	// increments it before it makes the change visible. Arrivals in a
	// shard that has active resources need no count (a sweep does not
	// pass over such a shard), which keeps this write off the hot path.
	Arrivals atomic.Uint64
	// Version lets readers that take no lock see this shard's top, the
	// top's value and the scheduler's size as they were at one instant.
	// Writers, under mu, make it odd for the span of a change that
	// touches more than one of those (Begin, End: Add, BatchAdd, Remove),
	// and while they publish a node's staged value (publishTop, unless a
	// span is open already), since a reader may still hold that node from
	// when it was the top with its old value; and under GlobalOrder they
	// add 2 whenever the top changes, since Acquire there must know that
	// no shard's top changed while it compared them. A reader loads it
	// before and after reading; an odd or changed value means the reading
	// may mix two states (see Peek, Scheduler.Len).
	Version atomic.Uint64

	// Keeps neighbouring shards in a []Shard off each other's cache lines.
	_ [64]byte
}

// Pool holds what the shards of one scheduler share: the counts that
// ejection decisions need across shards, and the health rules (set
// before the shards are used, never changed). The counts change only on
// Add, Remove, exclusion, inclusion and ejection, so keeping them in
// shared atomics costs the hot path nothing.
type Pool struct {
	Size     atomic.Int64 // resources added and not removed (draining ones are removed)
	Excluded atomic.Int64
	Ejected  atomic.Int64
	Health   Health
	LeaseTTL time.Duration // a lease's deadline after its grant; 0: none
}

// Init makes s the shard at index of a scheduler whose pool counts are
// pool and whose resources nodes maps by key; cmp orders its heap (see
// heap.New for lazy).
func (s *Shard[T, ID]) Init(index int, cmp func(a, b T) int, exclusive, global, peeked bool, pool *Pool, nodes *lookup.Map[T, ID]) {
	s.Heap = heap.New[T, ID](cmp, !peeked)
	s.Index, s.Exclusive, s.Global, s.Peeked, s.pool, s.nodes = index, exclusive, global, peeked, pool, nodes
}

// Risk marks the start of code under the lock that may panic half way:
// a comparator call, or a part of a step that makes several. Safe marks
// its end. A panic between the two leaves the shard Broken. The marks
// nest, so a step that risks more than one call is broken by a panic in
// any of them.
func (s *Shard[T, ID]) Risk() { s.risks++ }

// Safe ends the stretch that the last Risk began.
func (s *Shard[T, ID]) Safe() { s.risks-- }

// Broken reports whether a panic came in a stretch marked by Risk, and
// the shard has not been repaired since (see Repair).
func (s *Shard[T, ID]) Broken() bool { return s.risks > 0 }

// Pass returns a number for a giver's pass over the waiters, unique
// among all shards' passes and never 0 (see waiting.Queue.Skip).
// Requires the lock.
func (s *Shard[T, ID]) Pass() uint64 {
	s.passes++
	return s.passes<<11 | uint64(s.Index+1)
}

// Lock locks the shard; every step on it ends with Unlock.
func (s *Shard[T, ID]) Lock() { s.mu.Lock() }

// TryLock locks the shard if no one holds it, and reports whether it did.
func (s *Shard[T, ID]) TryLock() bool { return s.mu.TryLock() }

// Unejected is the count of ejections the current step ended, whose
// slots it still holds (see reserving an ejection in the scheduler).
func (s *Shard[T, ID]) Unejected() int64 { return s.unejected }

// Begin opens a change that readers without the lock must not see in
// part; End closes it. Call End deferred, so that a panic closes it too.
func (s *Shard[T, ID]) Begin() { s.Version.Add(1) }
func (s *Shard[T, ID]) End()   { s.Version.Add(1) }

// Peek returns the shard's top and the top's value as they were at one
// instant, with the shard's version then, or ok false when a writer was
// changing them (the caller then reads under the lock, see
// the scheduler's lockedPeek). It takes no lock.
func (s *Shard[T, ID]) Peek() (n *node.Node[T, ID], v T, version uint64, ok bool) {
	version = s.Version.Load()
	if version&1 != 0 {
		return nil, v, version, false
	}
	if n = s.Top.Load(); n != nil {
		v = n.Load()
	}
	return n, v, version, s.Version.Load() == version
}

// empty reports, without the lock, whether the shard had no active
// resource at an instant when no change was in progress. The count is
// read first: a change that emptied the shard and was still open when
// the count was read makes the version odd after it.
func (s *Shard[T, ID]) Empty() bool {
	return s.Active.Load() == 0 && s.Version.Load()&1 == 0
}

// Publish refreshes the lock-free view of the heap: the count of active
// resources and, when readers load it, the top. Each lock-free reader
// reads one of the two (Lease, AcquireContext and the sweeps the count,
// the Shared policy's Acquire the top), so their order matters: a shard
// that empties clears its top before its count says zero, and one that
// fills counts before it shows a top. Otherwise a reader could find the
// shard empty by its count, and a later one still be handed the top that
// just left. It skips stores that would change nothing: an atomic store
// is a locked instruction.
func (s *Shard[T, ID]) Publish() {
	n := int64(s.Heap.Len())
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

func (s *Shard[T, ID]) betweenStores() {
	if s.Publishing != nil {
		s.Publishing()
	}
}

// publishCount stores the count of active resources, n.
func (s *Shard[T, ID]) publishCount(n int64) {
	if was := s.Active.Load(); was != n {
		if was == 0 {
			s.Arrivals.Add(1)
		}
		s.Active.Store(n)
	}
}

// publishTop stores the heap's top for readers that take no lock, if
// any do, with its value: values are staged while their nodes are not
// the top (see node.Node.Stage), and published here when they become it,
// or change while it.
func (s *Shard[T, ID]) publishTop() {
	if !s.Peeked {
		return
	}
	t := s.Heap.Top()
	if t != nil && t.Stale() {
		// Within a change that has opened a span (Remove, when a node
		// staged earlier becomes the top) that span covers this; a
		// second begin would make the version even before the change
		// is done.
		open := s.Version.Load()&1 != 0
		if !open {
			s.Begin()
		}
		s.betweenStores()
		t.Publish()
		if !open {
			s.End()
		}
	}
	if s.Top.Load() != t {
		s.Top.Store(t)
		if s.Global {
			s.Version.Add(2)
		}
	}
}

// full reports whether every slot of n is taken. Under the Shared policy a
// resource is never full: holders are only counted.
func (s *Shard[T, ID]) Full(n *node.Node[T, ID]) bool {
	return s.Exclusive && n.Holders >= n.Capacity
}

// counter returns the count n is counted in while off the heap, or nil.
func (s *Shard[T, ID]) counter(n *node.Node[T, ID]) *int {
	switch n.State {
	case node.Held:
		return &s.Held
	case node.Excluded:
		return &s.Excluded
	case node.Draining:
		return &s.Draining
	case node.Resting:
		return &s.Resting[n.Rest]
	}
	return nil
}

// LimitsOnly reports whether n rests for its limits alone, with a slot
// free: without limits, a caller could have it now.
func (s *Shard[T, ID]) LimitsOnly(n *node.Node[T, ID]) bool {
	return n.Rest == node.RateLimited && n.State == node.Resting && !s.Full(n)
}

// Recount keeps HeldBack after a change to n that found LimitsOnly(n)
// was.
func (s *Shard[T, ID]) Recount(n *node.Node[T, ID], was bool) {
	switch now := s.LimitsOnly(n); {
	case now && !was:
		s.HeldBack.Add(1)
	case was && !now:
		s.HeldBack.Add(-1)
	}
}

// SetState changes n's state and keeps the per-state counters; the heap
// length is the count of active nodes.
func (s *Shard[T, ID]) SetState(n *node.Node[T, ID], to node.State) {
	was := s.LimitsOnly(n)
	if c := s.counter(n); c != nil {
		*c--
	}
	if n.State == node.Excluded {
		s.pool.Excluded.Add(-1)
	}
	n.State = to
	if c := s.counter(n); c != nil {
		*c++
	}
	if to == node.Excluded {
		s.pool.Excluded.Add(1)
	}
	s.Recount(n, was)
}

// SetRest records that n rests until until, for why, and keeps the
// counters. It does not move n: Place does. An ejection must have been
// reserved in the pool's Ejected (the scheduler's reserveEjection); SetRest
// releases the reservation when the ejection ends or is overridden, as
// the step unlocks (see unejected).
func (s *Shard[T, ID]) SetRest(n *node.Node[T, ID], until int64, why node.Rest) {
	was := s.LimitsOnly(n)
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
	s.Recount(n, was)
}

// restoreRest puts back n's rest as an operation saved it before
// changing it, for the operation's undo when user code panics: as
// SetRest, and an ejection put back keeps the slot its end had released,
// which the step still holds (unejected), since SetRest releases the
// slot of an ejection that it ends but takes none for one that it sets
// (an ejection's slot is taken when it is reserved: reserveEjection).
func (s *Shard[T, ID]) restoreRest(n *node.Node[T, ID], until int64, why node.Rest) {
	if why == node.Ejected && n.Rest != node.Ejected {
		s.unejected--
	}
	s.SetRest(n, until, why)
}

// Unlock ends every step on a shard: it rolls the step back if the
// comparator panicked in it (Broken is still set: see undo), and releases
// mu, and with it the ejection slots of the ejections the step ended.
func (s *Shard[T, ID]) Unlock() {
	if s.undo.n != nil || s.undo.batch != nil {
		if s.Broken() {
			s.rollback()
		}
		s.Commit()
	}
	if s.unejected != 0 {
		s.pool.Ejected.Add(-s.unejected)
		s.unejected = 0
	}
	s.mu.Unlock()
}

// stillResting reports whether n's rest is still running at now, and
// forgets a rest that has ended.
func (s *Shard[T, ID]) stillResting(n *node.Node[T, ID], now int64) bool {
	if n.RestUntil == 0 {
		return false
	}
	if now < n.RestUntil {
		return true
	}
	s.SetRest(n, 0, node.NoRest)
	return false
}

// ForgetEnded forgets n's suspension or ejection if it is over at now,
// and reports whether it did. One still on a live node after its end has
// not been reported: Place and the timer forget it as they report it. So
// an operation that replaces or clears n's rest itself (Suspend, a
// cooldown or ejection on a release, Exclude, Include) calls this first
// and, on true, emits EventResume once its step is done, as after Place;
// otherwise, with the timer late, the end would go unreported. The
// step's undo restores the rest.
func (s *Shard[T, ID]) ForgetEnded(n *node.Node[T, ID], now int64) bool {
	if (n.Rest != node.Suspended && n.Rest != node.Ejected) || now < n.RestUntil {
		return false
	}
	s.SetRest(n, 0, node.NoRest)
	return true
}

// limited starts a rest for n's limits if one of its buckets lacks a
// unit at now (see LimitRest), and reports whether it did. n has no rest.
func (s *Shard[T, ID]) limited(n *node.Node[T, ID], now int64) bool {
	next := LimitRest(n, now)
	if next == 0 {
		return false
	}
	s.SetRest(n, next, node.RateLimited)
	return true
}

// Activate moves n, off the heap, into the heap. The step must have
// saved n (see undo).
func (s *Shard[T, ID]) Activate(n *node.Node[T, ID]) {
	s.SetState(n, node.Active)
	s.Risk()
	s.Heap.Push(n)
	s.Safe()
	s.Publish()
}

// Deactivate takes active node n out of the heap into state to. The step
// must have saved n (see undo).
func (s *Shard[T, ID]) Deactivate(n *node.Node[T, ID], to node.State) {
	s.SetState(n, to)
	s.Risk()
	if to == node.Held && s.Heap.Top() == n {
		// A held node is given back soon, most often before anything
		// else happens to the heap: leave the sift (see heap.New).
		s.Heap.Pop()
	} else {
		s.Heap.Remove(n)
	}
	s.Safe()
	s.Publish()
}

// Best returns the heap's top, or nil. The heap may first run the sift a
// Pop left to later (see heap.New), which runs the comparator. Read the
// top only through Best.
func (s *Shard[T, ID]) Best() *node.Node[T, ID] {
	s.Risk()
	t := s.Heap.Top()
	s.Safe()
	return t
}

// Fix restores the order around active node n after its value or holder
// count changed.
func (s *Shard[T, ID]) Fix(n *node.Node[T, ID]) {
	s.Risk()
	s.Heap.Fix(n)
	s.Safe()
	s.Publish()
}

// Place puts n where it belongs: resting while its rest runs or, when it
// has a rate limit or budgets, while one of those lacks a unit (the rest
// that this starts, if any, the caller queues, as for any rest that
// Place's call changed); held while every slot is taken, otherwise
// active (and in order). So a node in the heap always covers the default
// cost. Excluded and draining nodes stay where they are: those states are
// the operator's decisions and outrank the others. A suspension or
// ejection found over ends here, whoever calls (its timer may come later),
// and Place reports whether it did, for the caller to report
// (EventResume). The step must have saved n (see undo).
func (s *Shard[T, ID]) Place(n *node.Node[T, ID], now int64) (resumed bool) {
	switch n.State {
	case node.Excluded, node.Draining, node.Removed:
		return false
	}
	why := n.Rest
	want := node.Active
	switch {
	case s.stillResting(n, now):
		want = node.Resting
	case n.Budgeted() && s.limited(n, now):
		want = node.Resting
	case s.Full(n):
		want = node.Held
	}
	switch {
	case n.State == want && want == node.Active:
		s.Fix(n)
	case n.State == want:
	case n.State == node.Active:
		s.Deactivate(n, want)
	case want == node.Active:
		s.Activate(n)
	default:
		s.SetState(n, want)
	}
	return (why == node.Suspended || why == node.Ejected) && n.Rest != why
}

// Order restores the heap order after k nodes were appended: sifting each
// up costs O(k log n), rebuilding the whole heap O(n); take the cheaper.
func (s *Shard[T, ID]) Order(k int) {
	n := s.Heap.Len()
	s.Risk()
	if k*bits.Len(uint(n)) >= n {
		s.Heap.Init()
	} else {
		for i := n - k; i < n; i++ {
			s.Heap.Up(i)
		}
	}
	s.Safe()
}

// Meter takes what a hold on n costs from its budgets (a rate limit's
// one unit among them), which must cover it (Budgets.Fits), and starts
// the rest that leaves n in, if any. A hold undone by a panic gets it all
// back from its undo (see undo).
func (s *Shard[T, ID]) Meter(n *node.Node[T, ID], cost config.Cost, now int64) {
	bs := n.Budgets()
	bs.Take(cost, now)
	next := bs.Rest(now)
	n.SetFullAt(bs.FullAt(now))
	if next > n.RestUntil {
		s.SetRest(n, next, node.RateLimited)
	}
}

// LimitRest is until when n must rest for its budgets (its rate limit
// among them), as of now, or 0. Requires n's shard lock.
func LimitRest[T any, ID comparable](n *node.Node[T, ID], now int64) int64 {
	return n.Budgets().Rest(now)
}

// SetLimitRest makes n rest for its limits until next (see LimitRest),
// or ends such a rest when next is 0: a refund, a larger Max or a faster
// rate brings the end forward. A suspension or an ejection is kept as it
// is, whichever ends later: when it ends, Place checks the limits again,
// so a shorter one hands over to the limits' rest, and the end of a
// longer one is never forgotten under a limit's rest that a refund then
// cuts short. It does not move n: Place does.
func (s *Shard[T, ID]) SetLimitRest(n *node.Node[T, ID], next int64) {
	switch {
	case n.Rest == node.Suspended || n.Rest == node.Ejected:
	case next == 0:
		if n.Rest == node.RateLimited {
			s.SetRest(n, 0, node.NoRest)
		}
	default:
		s.SetRest(n, next, node.RateLimited)
	}
}

// Repair brings the shard back to normal before an operation uses it,
// and reports whether it was Broken: after a comparator panicked under
// its lock in an earlier operation, it orders the heap again and
// publishes it, and the caller then serves the waiters the panic may
// have kept from a resource. It also runs the sift that the heap left
// waiting when an operation took its top out (see heap.New), unless
// only is that node: an operation that changes only the node it names,
// off the heap, may leave the sift waiting, so that giving the top back
// costs no sift (the common exclusive use). Any other change must come
// after the sift, which compares by the values it finds. Runs the
// comparator.
func (s *Shard[T, ID]) Repair(only *node.Node[T, ID]) (broken bool) {
	if t := s.Heap.Waiting(); s.risks == 0 && (t == nil || t == only) {
		return false // the common case, in a line of its own so that it inlines
	}
	return s.repair(only)
}

func (s *Shard[T, ID]) repair(only *node.Node[T, ID]) (broken bool) {
	if s.Broken() {
		s.Heap.Init()
		s.risks = 0
		s.Publish()
		broken = true
	}
	if t := s.Heap.Waiting(); t != nil && t != only {
		s.Best()
	}
	return broken
}

// Versions returns the sum of the versions of shards, and whether a
// change is in progress in one of them (an odd version): two sums with
// no change in progress that are equal saw no change in between.
func Versions[T any, ID comparable](shards []Shard[T, ID]) (sum uint64, busy bool) {
	for i := range shards {
		v := shards[i].Version.Load()
		sum += v
		busy = busy || v&1 != 0
	}
	return sum, busy
}

// Stable returns read() as of an instant when no change was in progress
// in shards: between two reads of their versions that show no change in
// progress or completed in between. If changes keep coming, it stops
// them by locking every shard.
func Stable[T any, ID comparable](shards []Shard[T, ID], read func() int64) int64 {
	for range 3 {
		before, busy := Versions(shards)
		if busy {
			continue
		}
		n := read()
		if after, _ := Versions(shards); after == before {
			return n
		}
	}
	for i := range shards {
		shards[i].Lock()
		defer shards[i].Unlock()
	}
	return read()
}

// Counts are nodes by state, and their holders.
type Counts struct {
	Active, Held, Excluded, Draining, Holders int
	Resting                                   [node.RestKinds]int
}

// Total sums the counts of shards, each read under its lock in turn, and
// returns each shard's Active count beside the sum.
func Total[T any, ID comparable](shards []Shard[T, ID]) (sum Counts, active []int) {
	active = make([]int, len(shards))
	for i := range shards {
		c := shards[i].counts()
		active[i] = c.Active
		sum.Active += c.Active
		sum.Held += c.Held
		sum.Excluded += c.Excluded
		sum.Draining += c.Draining
		sum.Holders += c.Holders
		for k := range sum.Resting {
			sum.Resting[k] += c.Resting[k]
		}
	}
	return sum, active
}

func (s *Shard[T, ID]) counts() Counts {
	s.Lock()
	defer s.Unlock()
	return Counts{s.Heap.Len(), s.Held, s.Excluded, s.Draining, s.Holders, s.Resting}
}
