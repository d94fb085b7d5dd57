// Package node defines the scheduler's per-resource record and its states.
package node

import (
	"maps"
	"math"
	"reflect"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/budget"
)

// State is where a resource is in its lifecycle (see docs/ARCHITECTURE.md).
// Holders are counted separately: an active resource may have holders
// (when its capacity is above one, or under the Shared policy with leases),
// and so may an excluded one.
type State uint8

const (
	// Removed: not in the scheduler. A new node starts here and a removed
	// one ends here; a goroutine that still holds a pointer to it after it
	// was removed sees this state and treats the key as not found.
	Removed State = iota
	// Active: in its shard's heap, acquirable.
	Active
	// Held: every slot taken (Holders == Capacity, Exclusive policy); off
	// the heap until a holder releases.
	Held
	// Excluded: taken out of the pool by the operator, off the heap until
	// included. Existing holders keep their holds.
	Excluded
	// Draining: removed while held. It is invisible to every operation but
	// the release of its holds, and keeps its key in the lookup map (so the
	// key cannot be added again) until the last holder releases.
	Draining
	// Resting: off the heap until RestUntil (see Rest for why). Existing
	// holders keep their holds; it comes back by itself.
	Resting
)

var stateNames = [...]string{Removed: "removed", Active: "active", Held: "held", Excluded: "excluded", Draining: "draining", Resting: "resting"}

// Rest says why a node rests.
type Rest uint8

const (
	NoRest      Rest = iota
	Suspended        // Suspend, or a cooldown after release
	Ejected          // repeated failures
	RateLimited      // out of tokens until the next one
	restKinds
)

// RestKinds is the number of Rest values, for per-kind counters.
const RestKinds = int(restKinds)

var restNames = [...]string{NoRest: "none", Suspended: "suspended", Ejected: "ejected", RateLimited: "rate-limited"}

func (r Rest) String() string {
	if int(r) < len(restNames) {
		return restNames[r]
	}
	return "invalid"
}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "invalid"
}

// Node is one resource. Every field except Key, Shard, published, word
// and Leaving is guarded by the lock of shard Shard, and so is its Extra;
// Key, Shard and word never change after the node is created.
//
// Invariants (whenever the shard lock is free):
//   - State == Active exactly when Index >= 0, and then the shard's heap
//     holds the node at Index;
//   - Holders == Anonymous() + len(Leases()), so Anonymous is not stored;
//   - Draining implies Holders > 0.
//
// The small fields share three words: every resource has a node, and a
// scheduler of a million resources keeps a million of them.
type Node[T any, ID comparable] struct {
	// Value is the resource, read under the shard lock (the heap orders by
	// it). published holds a value for readers that take no lock (Load):
	// the value's own word when T is one pointer word (word set), which
	// costs no allocation, else a pointer to a copy, never written once
	// published. Such readers read only a shard's top, so a new Value is
	// staged (stale set) and published when the node is or becomes the
	// top (see Stage and Publish): an atomic store is a locked
	// instruction, and most new values are not the top's. A node whose
	// T is not word-shaped starts stale, with no copy: most nodes are
	// never the top of a shard that readers without the lock look at.
	//
	// Value, Index and Holders come first: a sift reads the first and
	// writes the second of every node it passes, and breaks ties by the
	// third, so they should share a cache line.
	Value T
	Index int32
	// Holders is the number of holds outstanding. Under the Exclusive
	// policy a hold is taken only while Holders < Capacity (an Update
	// may lower Capacity below it later), so it stays at most
	// math.MaxInt32; under Shared only leases hold, each with its record
	// in Extra and the expiry queue.
	Holders int32
	// Capacity is the number of holders the resource takes at once (>= 1).
	Capacity int32
	Shard    int32
	// The small fields share one word with Leaving.
	State State
	Rest  Rest // why the node rests (see RestUntil)
	word  bool
	stale bool // Value has changed since it was published, or never was
	// Leaving is set, under the shard lock, when the node is removed while
	// held, and never cleared: its key stays taken until the last holder
	// releases. Add reads it with no shard lock when it finds the key
	// taken, to say whether the resource drains (ErrResourceDraining).
	// Since it is set once and the key stays in the lookup map after it
	// is set, a reader that finds it set knows the key was taken by a
	// draining resource at some instant after its own lookup.
	Leaving   atomic.Bool
	published unsafe.Pointer
	Key       ID
	// RestUntil is when the node's rest ends, in scheduler clock
	// nanoseconds; 0 when it does not rest. Rest says why. A node rests
	// (state Resting) while RestUntil is in the future, unless it is
	// excluded or draining, which take precedence.
	RestUntil int64
	// extra is what only some resources use; nil until one does (see
	// Extra).
	extra *Extra
}

// Anonymous counts holds taken by Acquire, which end with Release(id):
// the holds that are not leases.
func (n *Node[T, ID]) Anonymous() int { return int(n.Holders) - len(n.Leases()) }

// FullAt is when the node's tightest budget (see Extra.Budgets) is next
// full, in scheduler clock nanoseconds, as of its last change: the
// heap's tie-break between resources the comparator ranks equal, earlier
// first (more of the budget left). It changes only when a budget does,
// never with time alone, so that it can key the heap; 0 for a node
// without budgets.
func (n *Node[T, ID]) FullAt() int64 {
	if n.extra == nil {
		return 0
	}
	return n.extra.fullAt
}

// SetFullAt sets what FullAt returns; 0 makes no Extra.
func (n *Node[T, ID]) SetFullAt(at int64) {
	if n.extra != nil || at != 0 {
		n.Extra().fullAt = at
	}
}

// Extra is the part of a node that only resources with leases, a rate
// limit or failures use.
type Extra struct {
	// Leases are the outstanding leases, each with its own token; change
	// them only through the node's AddLease and DropLease, which keep
	// leaseAt in step.
	Leases []Lease
	// leaseAt indexes Leases by token once there are more than
	// indexLeasesAbove of them (many shared leases of one resource), so
	// that ending one does not scan the rest under the shard lock.
	leaseAt map[uint64]int
	// Issued is the token of the latest lease on this node; tokens of a
	// node are never reused, so a stale handle never matches a later lease.
	Issued uint64
	// Failures counts failures in a row; Ejections, times ejected.
	Failures  int
	Ejections int
	fullAt    int64 // see Node.FullAt
	// Budgets are the node's budgets: its rate limit, if any, then its
	// config.Limits in the order they were given, names distinct; each
	// Born at the node's Issued when it was made.
	Budgets budget.Budgets
}

// Budgets returns the node's budgets (change their buckets in place, under
// the shard lock; replace the slice through SetBudgets).
func (n *Node[T, ID]) Budgets() budget.Budgets {
	if n.extra == nil {
		return nil
	}
	return n.extra.Budgets
}

// SetBudgets gives the node the budgets bs; none makes no Extra.
func (n *Node[T, ID]) SetBudgets(bs budget.Budgets) {
	if bs != nil || n.extra != nil {
		n.Extra().Budgets = bs
	}
}

// Budgeted reports whether the node has budgets: Limits, or a rate limit
// (see budget.Budget).
func (n *Node[T, ID]) Budgeted() bool { return n.extra != nil && len(n.extra.Budgets) > 0 }

// Extra returns the node's Extra, making it if the node has none.
func (n *Node[T, ID]) Extra() *Extra {
	if n.extra == nil {
		n.extra = new(Extra)
	}
	return n.extra
}

// Health returns the node's failures in a row and its ejections.
func (n *Node[T, ID]) Health() (failures, ejections int) {
	if n.extra == nil {
		return 0, 0
	}
	return n.extra.Failures, n.extra.Ejections
}

// SetHealth sets what Health returns; zeros make no Extra.
func (n *Node[T, ID]) SetHealth(failures, ejections int) {
	if n.extra != nil || failures != 0 || ejections != 0 {
		e := n.Extra()
		e.Failures, e.Ejections = failures, ejections
	}
}

// ResetFailures starts the count of failures in a row again.
func (n *Node[T, ID]) ResetFailures() {
	if n.extra != nil {
		n.extra.Failures = 0
	}
}

// Leases returns the node's outstanding leases (do not change them).
func (n *Node[T, ID]) Leases() []Lease {
	if n.extra == nil {
		return nil
	}
	return n.extra.Leases
}

// Lease returns the lease at position i of Leases(), to change its
// deadline.
func (n *Node[T, ID]) Lease(i int) *Lease { return &n.extra.Leases[i] }

// Issue returns a token for a new lease, never one issued before.
func (n *Node[T, ID]) Issue() uint64 {
	e := n.Extra()
	e.Issued++
	return e.Issued
}

// Never is the deadline that never comes: a rest until Never lasts until
// something ends it (Include), a lease due at Never does not expire. A
// deadline past the clock's range saturates to it (see After), and the
// scheduler's clock reads below it (see Scheduler.now).
const Never = math.MaxInt64

// After returns now + d, or Never if that is past the range of int64.
// now and d are not negative.
func After(now int64, d time.Duration) int64 {
	if int64(d) >= Never-now {
		return Never
	}
	return now + int64(d)
}

// Lease is one outstanding lease on a node.
type Lease struct {
	Token uint64
	// Deadline is when the lease expires, in scheduler clock nanoseconds;
	// 0 or Never means never.
	Deadline int64
	// Cost is what the lease has taken from the node's budgets: its
	// estimate (nil: 1 of each limit) as corrected by each settlement.
	// It lives here, not in the caller's handle, because every copy of a
	// handle is the same lease: a settlement through one corrects what
	// another settled. The map is never changed, only replaced.
	Cost map[string]int64
	// Tenant and Priority are whom the lease was granted to (nil: the
	// default tenant of a scheduler without Tenants), so that a
	// settlement corrects the tenant's budgets and usage.
	Tenant   *budget.Tenant
	Priority int
}

// New returns a node that is not yet in any structure.
func New[T any, ID comparable](v T, key ID, shard, capacity int) *Node[T, ID] {
	n := &Node[T, ID]{Key: key, Index: -1, Shard: int32(shard), Capacity: int32(capacity)}
	n.Init(v, WordShaped[T]())
	return n
}

// WordShaped reports whether a T is one pointer word (a pointer, map,
// channel or func), which a node publishes without a copy. Callers that
// make many nodes ask once and pass the answer to Init.
func WordShaped[T any]() bool {
	switch reflect.TypeOf((*T)(nil)).Elem().Kind() {
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return true
	}
	return false
}

// Init gives a node that no other goroutine can see yet its first value;
// word must be WordShaped[T](). A word-shaped value is published at
// once, since that costs nothing; any other waits, stale, for the first
// Publish.
func (n *Node[T, ID]) Init(v T, word bool) {
	n.Value, n.word = v, word
	if word {
		n.published = wordOf(v)
	} else {
		n.stale = true
	}
}

// Stage gives the node a new value for readers that hold the shard lock;
// readers that do not keep loading the old one until Publish.
func (n *Node[T, ID]) Stage(v T) {
	n.Value = v
	n.stale = true
}

// Stale reports whether the node has a staged value not yet published.
func (n *Node[T, ID]) Stale() bool { return n.stale }

// Publish makes the staged value the one Load returns. It allocates
// nothing when T is word-shaped.
func (n *Node[T, ID]) Publish() {
	n.stale = false
	if n.word {
		atomic.StorePointer(&n.published, wordOf(n.Value))
	} else {
		atomic.StorePointer(&n.published, copyOf(n.Value))
	}
}

// Load returns the value for a reader that holds no lock, of a node
// published at least once (a shard's top: see Publish).
func (n *Node[T, ID]) Load() T {
	p := atomic.LoadPointer(&n.published)
	if n.word {
		return *(*T)(unsafe.Pointer(&p))
	}
	return *(*T)(p)
}

// wordOf returns the one word of a word-shaped v as a pointer, which keeps
// what it points to alive for the garbage collector.
func wordOf[T any](v T) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&v)) }

// copyOf returns a pointer to a new copy of v.
func copyOf[T any](v T) unsafe.Pointer {
	c := new(T)
	*c = v
	return unsafe.Pointer(c)
}

// indexLeasesAbove is where a scan of the leases starts to cost more than
// keeping an index: below it (every exclusive resource of small capacity)
// a node allocates nothing for its leases beyond the slice.
const indexLeasesAbove = 8

// AddLease records a new lease.
func (n *Node[T, ID]) AddLease(l Lease) {
	e := n.Extra()
	e.Leases = append(e.Leases, l)
	switch {
	case e.leaseAt != nil:
		e.leaseAt[l.Token] = len(e.Leases) - 1
	case len(e.Leases) > indexLeasesAbove:
		e.leaseAt = make(map[uint64]int, 2*len(e.Leases))
		for i, l := range e.Leases {
			e.leaseAt[l.Token] = i
		}
	}
}

// FindLease returns the position of the lease with token, or -1.
func (n *Node[T, ID]) FindLease(token uint64) int {
	e := n.extra
	if e == nil {
		return -1
	}
	if e.leaseAt != nil {
		if i, ok := e.leaseAt[token]; ok {
			return i
		}
		return -1
	}
	for i := range e.Leases {
		if e.Leases[i].Token == token {
			return i
		}
	}
	return -1
}

// DropLease removes the lease at position i (order is not kept).
func (n *Node[T, ID]) DropLease(i int) {
	e := n.extra
	last := len(e.Leases) - 1
	if e.leaseAt != nil {
		delete(e.leaseAt, e.Leases[i].Token)
		if i != last {
			e.leaseAt[e.Leases[last].Token] = i
		}
	}
	e.Leases[i] = e.Leases[last]
	e.Leases = e.Leases[:last]
}

// LeaseIndexConsistent reports whether the token index, if any, matches
// the leases (for invariant checks).
func (n *Node[T, ID]) LeaseIndexConsistent() bool {
	e := n.extra
	if e == nil || e.leaseAt == nil {
		return true
	}
	if len(e.leaseAt) != len(e.Leases) {
		return false
	}
	for i, l := range e.Leases {
		if j, ok := e.leaseAt[l.Token]; !ok || j != i {
			return false
		}
	}
	return true
}

// Settle replaces the estimate e paid from bs, its node's budgets, by
// what the call actually spent, for the names actual gives (the others
// keep their estimate): bs take the difference, at now, and e pays
// actual from then on. Requires the lock of the node's shard.
func (e *Lease) Settle(bs budget.Budgets, actual config.Cost, now int64) {
	paid := config.Cost(e.Cost)
	bs.Settle(e.Token, paid, actual, now)
	if len(actual) > 0 {
		c := make(config.Cost, len(paid)+len(actual))
		maps.Copy(c, paid)
		maps.Copy(c, actual)
		e.Cost = c // never changed in place: copies of it may be read
	}
}

// OthersPaid sums what n's leases other than token have taken from b:
// calls granted that a provider may not have received yet. A lease
// granted before b was born took nothing from it.
func (n *Node[T, ID]) OthersPaid(token uint64, b *budget.Budget) int64 {
	var sum int64
	for _, o := range n.Leases() {
		if o.Token == token || b.Born >= o.Token {
			continue
		}
		sum = min(sum+config.Cost(o.Cost).Of(b.Name), config.MaxUnits)
	}
	return sum
}
