// Package deadline runs every deadline of a scheduler on one clock timer:
// the end of a lease, the end of a rest and the wake of waiting callers,
// as typed entries in one queue ordered by when they come due, with a
// single timer armed for the earliest.
//
//	t := deadline.New(clock, now, handle)
//	t.Schedule(at, deadline.Entry[*Node]{Kind: deadline.LeaseEnd, Node: n, Token: tok})
//	t.Drop(at, sameEntry) // the lease ended first
//	t.Stop()
//
// handle runs on the timer's goroutine, one due entry at a time, with no
// lock of the package held. A deadline that moves or ends early leaves its
// entry queued, marked as dropped (a count by entry, not a search); the
// timer skips it, and once the marked entries outnumber the others one
// pass takes them out, so the queue holds about as many entries as there
// are live deadlines.
package deadline

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crsched/crs/config"
)

// Never is a deadline that never comes: it is not queued.
const Never = math.MaxInt64

// Kind says what an entry's deadline ends.
type Kind uint8

const (
	// LeaseEnd is the deadline of the lease with Token on Node.
	LeaseEnd Kind = iota + 1
	// RestEnd is the end of Node's rest.
	RestEnd
	// Wake is the instant a budget of shard Shard may cover the oldest
	// waiter's cost, so its waiters are served.
	Wake
)

// Entry is one deadline, named by what it ends. Entries are compared
// whole: a Drop marks the entry equal to the one scheduled.
type Entry[N comparable] struct {
	Kind  Kind
	Node  N      // LeaseEnd, RestEnd
	Token uint64 // LeaseEnd
	Shard int    // Wake
}

// PanicRetry is how long after a panic in handle its entry comes due
// again: soon, for a lease past its deadline keeps its slot and a waiter
// may wait for it, but not at once, for a comparator that panics every
// time would otherwise keep the timer busy.
const PanicRetry = 10 * time.Millisecond

// Timer holds a scheduler's deadlines. Its methods are safe for
// concurrent use; a caller may hold a shard lock (lock order: shard, then
// the Timer's).
type Timer[N comparable] struct {
	clock  config.Clock
	now    func() int64 // the scheduler's reading of clock, in ns
	handle func(Entry[N])
	panics atomic.Uint64

	mu      sync.Mutex
	queue   queue[N]     // guarded by mu
	timer   config.Timer // guarded by mu; nil when not armed
	armedAt int64        // guarded by mu
	closed  bool         // guarded by mu
	// popped is the latest time up to which fire has popped the queue:
	// every entry due by then that was queued before that pop is out of
	// the queue. Guarded by mu.
	popped int64
	// dropped counts, by entry, the queued entries that stand for no
	// deadline any more; each is in the queue (see Drop), and fire or a
	// compaction takes it out. dropping is their total. Guarded by mu.
	dropped  map[due[N]]int
	dropping int
	// running counts handle calls in progress, so Stop can wait for them.
	// Add is called only under mu while not closed.
	running sync.WaitGroup
}

// due is an entry with its deadline: what a mark names.
type due[N comparable] struct {
	at    int64
	entry Entry[N]
}

// New returns a Timer that reads clock through now and runs handle for
// each entry that comes due.
func New[N comparable](clock config.Clock, now func() int64, handle func(Entry[N])) *Timer[N] {
	return &Timer[N]{clock: clock, now: now, handle: handle}
}

// Schedule queues e to come due at at. A deadline of Never, or any after
// Stop, is not queued.
func (t *Timer[N]) Schedule(at int64, e Entry[N]) {
	if at == Never {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	t.queue.push(due[N]{at, e})
	if t.timer == nil || at < t.armedAt {
		t.arm(at)
	}
}

// Drop marks the entry e, scheduled for at, as standing for no deadline
// any more: the lease ended or was extended, the rest moved. An entry due
// by the last time the timer fired may already have left the queue, to a
// handle that will find it stale; it is not marked, for a mark must stand
// for an entry in the queue. A deadline of 0 or Never was never queued.
func (t *Timer[N]) Drop(at int64, e Entry[N]) {
	if at == 0 || at == Never {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || at <= t.popped {
		return
	}
	if t.dropped == nil {
		t.dropped = make(map[due[N]]int)
	}
	t.dropped[due[N]{at, e}]++
	t.dropping++
	if 2*t.dropping > t.queue.len() {
		t.queue.filter(func(d due[N]) bool { return !t.forget(d) })
	}
}

// Stop disarms the timer, refuses every later Schedule, and waits for a
// handle in progress to return.
func (t *Timer[N]) Stop() {
	t.mu.Lock()
	t.closed = true
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	t.mu.Unlock()
	t.running.Wait()
}

// Panics counts the panics recovered from handle.
func (t *Timer[N]) Panics() uint64 { return t.panics.Load() }

// arm points the clock timer at at. Requires mu.
func (t *Timer[N]) arm(at int64) {
	if t.timer != nil {
		t.timer.Stop()
	}
	t.armedAt = at
	t.timer = t.clock.AfterFunc(time.Duration(at-t.now()), t.fire)
}

// fire handles the due entries and re-arms the timer for the next one.
func (t *Timer[N]) fire() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.running.Add(1)
	defer t.running.Done()
	now := t.now()
	t.popped = max(t.popped, now)
	var live []Entry[N]
	for t.queue.len() > 0 && t.queue.next() <= now {
		if d := t.queue.pop(); !t.forget(d) {
			live = append(live, d.entry)
		}
	}
	t.timer = nil
	if t.queue.len() > 0 {
		t.arm(t.queue.next())
	}
	t.mu.Unlock()
	for _, e := range live {
		t.run(e)
	}
}

// run calls handle for e. No caller is there to be told of a panic, and
// one left to unwind would end the process; handle undoes its step as for
// any caller, so the panic is recovered and counted, and e comes due
// again after PanicRetry.
func (t *Timer[N]) run(e Entry[N]) {
	defer func() {
		if recover() != nil {
			t.panics.Add(1)
			at := t.now()
			t.Schedule(at+min(int64(PanicRetry), Never-1-at), e)
		}
	}()
	t.handle(e)
}

// forget reports whether d was dropped, and if so unmarks it: its entry
// is leaving the queue. Requires mu.
func (t *Timer[N]) forget(d due[N]) bool {
	if t.dropped[d] == 0 {
		return false
	}
	if t.dropped[d]--; t.dropped[d] == 0 {
		delete(t.dropped, d)
	}
	t.dropping--
	return true
}
