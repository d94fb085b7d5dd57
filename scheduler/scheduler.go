package scheduler

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/affinity"
	"github.com/crsched/crs/internal/budget"
	"github.com/crsched/crs/internal/deadline"
	"github.com/crsched/crs/internal/dispatch"
	"github.com/crsched/crs/internal/lookup"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/rotation"
	"github.com/crsched/crs/internal/search"
	"github.com/crsched/crs/internal/shard"
	"github.com/crsched/crs/internal/waiting"
)

// Scheduler hands out resources of type T, identified by keys of type ID,
// best first by the configured comparator. Create one with New; Acquire
// and Release, AcquireContext and Lease hand resources out and take them
// back, Stats reports the pool's state, Shutdown closes it. All methods are
// safe for concurrent use. The lock order and what runs under which lock:
// docs/ARCHITECTURE.md, "Lock rules".
type Scheduler[T any, ID comparable] struct {
	cmp      func(a, b T) int
	key      func(T) ID
	capacity func(T) int  // nil: every resource has capacity 1
	nilness  node.Nilness // how to tell a nil T, which Add must reject
	word     bool         // T is one pointer word (see node.WordShaped)
	// checkKeys: ID has values that cannot be map keys (see
	// lookup.Usable), so keys are checked before they reach the map.
	checkKeys bool
	policy    config.AcquirePolicy
	global    bool // Ordering is GlobalOrder
	// lockFree: Acquire may read a shard's published top without its lock
	// (Shared policy, no rate limits or budgets: a shared acquisition then
	// changes nothing).
	lockFree bool
	clock    config.Clock
	epoch    time.Time // the clock's zero for deadlines kept as int64

	rateLimit func(T) (float64, int) // nil: unlimited
	limits    func(T) []config.Limit // nil: no budgets
	// budgeted: Limits is set. Waiting callers are then served in strict
	// FIFO order, and a cost that no resource covers yet is waited for
	// through the wakes (see internal/waiting, wake.go).
	budgeted bool
	profiles budget.Profiles
	// tenants is config.Tenants (nil: every tenant has weight 1 and no
	// limits); tenantTable keeps its answers, by name, and defTenant the
	// default tenant's (nil without tenants).
	tenants     func(string) config.Tenant
	tenantTable sync.Map
	defTenant   *budget.Tenant
	strategy    acquire.AcquireStrategy // nil: the default strategy, rotation
	rotation    rotation.Counter
	view        acquire.ShardView

	shards []shard.Shard[T, ID]
	nodes  *lookup.Map[T, ID]
	// assigned spreads new resources over the shards in rotation.
	assigned atomic.Uint64

	affinity affinity.Map[T, ID]
	room     waiting.Room[T, ID]
	search   search.Searcher[T, ID]
	// deadlines holds every lease deadline, end of a rest and wake, on
	// one timer (see expiry.go).
	deadlines *deadline.Timer[*node.Node[T, ID]]
	expired   atomic.Uint64 // leases reclaimed at their deadline
	pool      shard.Pool
	totals    struct{ suspensions, ejections, failures atomic.Uint64 }

	events *dispatch.Dispatcher[ID] // nil when there are no observers
	closed atomic.Bool
	hooks  hooks // set only by tests (export_test.go)
}

// hooks are the places where a test runs code in the middle of an
// operation; all nil outside tests.
type hooks struct {
	// waiting runs at each step of a caller that found nothing (set on
	// the room: waiting.Room.Hook).
	waiting func(waiting.Step)
	// refusing runs in a failing BatchAdd after each look at the map
	// (see refusal).
	refusing func(refusal)
	// publishing runs in a shard's Publish, under its lock, wherever a
	// reader without the lock may look between two of its stores (set on
	// every shard: shard.Shard.Publishing).
	publishing func()
}

// gone reports whether n was removed, as far as every operation but the
// release of its holds is concerned.
func gone[T any, ID comparable](n *node.Node[T, ID]) bool {
	return n.State == node.Removed || n.State == node.Draining
}

// now is the clock's reading as nanoseconds since New, for deadlines. It
// stays below node.Never, so that a deadline of Never never comes, even
// on a clock run past the range of a time.Duration (Sub saturates).
func (s *Scheduler[T, ID]) now() int64 {
	return min(int64(s.clock.Now().Sub(s.epoch)), node.Never-1)
}

// after is the deadline d from now; node.Never if that is out of range.
func (s *Scheduler[T, ID]) after(d time.Duration) int64 { return node.After(s.now(), d) }

// noEvent stands for "no event to emit" where a step may call for one.
const noEvent = shard.NoEvent

func (s *Scheduler[T, ID]) emit(t events.EventType, id ID) {
	if s.events != nil {
		s.events.Emit(events.Event[ID]{Type: t, ID: id})
	}
}

// acquired emits the event of an acquisition.
func (s *Scheduler[T, ID]) acquired(n *node.Node[T, ID]) {
	if s.events != nil {
		s.emit(events.EventAcquire, n.Key)
	}
}

// refusal is where a failing BatchAdd is, for a test hook.
type refusal uint8

const (
	insertFailed refusal = iota // the insert met a taken key and undid itself
	lookedUp                    // the keys were looked up again
)

// yieldTo gives the processor to a waiter just handed a resource. The
// hand-off wakes the waiter into this P's run-next slot, where it would
// otherwise sit until this goroutine blocks, however long the caller goes
// on working (jackc/puddle issue 46).
func yieldTo(served bool) {
	if served {
		runtime.Gosched()
	}
}
