package queue

// The order of service: this file alone decides which waiter a giver
// serves next (Pop, PopCommitted, PopFor), where a new waiter and one a
// giver could not serve go (Push, PushFront, Skip, Park), and whether a
// caller that does not wait may take a resource while others wait
// (MustQueue).
//
// Waiters are in classes, one per tenant and priority (class.go). The
// next waiter is the first of a class at the highest priority that has
// one ready; among the classes of that priority, the one with the least
// virtual time: start-time fair queuing, where a grant of u share units
// (config.Config.ShareBy) adds u/weight to its class's time, and a class
// that becomes ready starts at its level's time at the earliest, so that
// a tenant back from idle banks no credit. Within a class, first come,
// first served. Without options every caller is in one class, and the
// order is today's: first come, first served.
//
// A class whose first waiter cannot be served holds back only itself:
// a giver whose shard does not cover that waiter's cost skips the class
// for the rest of its pass (Skip), and one whose tenant's budgets fall
// short parks it until they cover it (Park), and serves the next class.
// In the strict order (Queue.Strict) a caller does not pass the waiters
// (see MustQueue, and the waiting room's Wait): a class's first waiter, whose cost no
// resource may cover yet, holds back the rest of its class, so that a
// large cost is not starved by small ones of its own tenant.

import (
	"slices"
	"sort"

	"github.com/crsched/crs/internal/budget"
)

// First reports whether w is the first waiter of its class.
func (q *Queue[G]) First(w *Waiter[G]) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return w.queued && w.class.head == w
}

// Fair reports whether a class other than the default one has been
// used: only then do grants of the default class count (see Granted).
func (q *Queue[G]) Fair() bool { return q.fair.Load() }

// Push queues w at the back of its class, or reports false if the queue
// is closed.
func (q *Queue[G]) Push(w *Waiter[G]) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	c := q.classOf(w.Tenant, w.Priority)
	w.class, w.prev, w.next = c, c.tail, nil
	if c.tail != nil {
		c.tail.next = w
	} else {
		c.head = w
	}
	c.tail = w
	w.queued, w.left = true, false
	w.state.Store(pending)
	q.len.Add(1)
	if c.n++; c.n == 1 {
		q.ready(c)
	} else if c.parked != 0 {
		q.parkedN.Add(1)
	}
	return true
}

// Requeue is what PushFront did with a waiter.
type Requeue uint8

const (
	Requeued Requeue = iota // back at the front
	Closed                  // left out: the queue is closed
	Left                    // left out: its caller gave up while it was popped
)

// PushFront puts w back at the front of its class, where a giver that
// popped it but could not serve it found it, with its class's virtual
// time as it was, unless the queue is closed or w's caller gave up
// meanwhile: its Remove found w popped, and it waits for the grant on
// w.C, which the giver must then send (or it would wait until some
// resource served it, its context long over).
func (q *Queue[G]) PushFront(w *Waiter[G]) Requeue {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.putBack(w)
}

// Skip is PushFront for a waiter whose cost the giver's shard does not
// cover: its class is passed over for the rest of the giver's pass
// (PopFor with pass), and so holds back no other class.
func (q *Queue[G]) Skip(w *Waiter[G], pass uint64) Requeue {
	q.mu.Lock()
	defer q.mu.Unlock()
	r := q.putBack(w)
	if r == Requeued {
		w.class.skip = pass
	}
	return r
}

// Park is PushFront for a waiter whose tenant's budgets cover its cost
// only at until: its class is passed over by every giver until then. It
// reports whether the caller must arm a wake for until (see NextPark).
func (q *Queue[G]) Park(w *Waiter[G], until int64) (r Requeue, arm bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if r = q.putBack(w); r == Requeued {
		arm = q.park(w.class, until)
	}
	return r, arm
}

// ParkQueued parks the class of w, its first waiter, still queued, until
// until (see Park).
func (q *Queue[G]) ParkQueued(w *Waiter[G], until int64) (arm bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !w.queued || w.class.head != w {
		return false
	}
	return q.park(w.class, until)
}

// NextPark returns the end of the earliest parking that no wake is
// armed for yet, once the parkings that ended are over, and records the
// wake the caller must arm for it; arm false: none is needed.
func (q *Queue[G]) NextPark() (at int64, arm bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.unparkDue()
	if q.parkWake != 0 && q.parkWake <= now {
		q.parkWake = 0
	}
	if q.parked.len() == 0 {
		q.parkWake = 0
		return 0, false
	}
	if q.parkWake != 0 {
		return 0, false
	}
	q.parkWake = q.parked.top().parked
	return q.parkWake, true
}

// Pop removes and returns the waiter to serve next, or nil.
func (q *Queue[G]) Pop() *Waiter[G] { return q.PopFor(0, false) }

// PopCommitted removes and returns the next waiter that has committed to
// waiting (see Commit), or nil. It tells each pending waiter before it
// in its class to search again; they stay queued until they leave. A
// giver that cannot tell whether its resource is the best of all uses
// it: a committed waiter looked for a resource after it queued and found
// none, so every resource visible now appeared after that, under a giver
// that then served the queue (docs/ARCHITECTURE.md, Waiting); a pending
// one will look for itself.
func (q *Queue[G]) PopCommitted() *Waiter[G] { return q.PopFor(0, true) }

// PopFor is Pop, or with committed PopCommitted, for a giver's pass: the
// classes that pass skipped (Skip) are passed over. Pass 0 skips none.
func (q *Queue[G]) PopFor(pass uint64, committed bool) *Waiter[G] {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.unparkDue()
	for _, l := range q.levels {
		if w := q.pickIn(l, pass, committed); w != nil {
			return w
		}
	}
	return nil
}

// pickIn pops the next waiter of level l: the first (committed) waiter
// of its ready class with the least virtual time that the pass has not
// skipped. The classes passed over go back as they were. The class's
// time moves on by the waiter's share now, so that a concurrent giver
// already serves the next class; putBack moves it back if the waiter
// goes back.
func (q *Queue[G]) pickIn(l *level[G], pass uint64, committed bool) *Waiter[G] {
	var w *Waiter[G]
	for l.ready.len() > 0 {
		c := l.ready.top()
		if pass == 0 || c.skip != pass {
			if w = first(c, committed); w != nil {
				break
			}
		}
		l.ready.remove(c)
		q.aside = append(q.aside, c)
	}
	for _, c := range q.aside {
		l.ready.push(c)
	}
	clear(q.aside)
	q.aside = q.aside[:0]
	if w == nil {
		return nil
	}
	c := w.class
	l.v, w.was = c.vtime, c.vtime
	q.unlink(w)
	q.charge(c, w.Units)
	return w
}

// first returns the first waiter of c, or with committed its first
// committed one, telling the pending ones before it to search again.
func first[G any](c *class[G], committed bool) *Waiter[G] {
	if !committed {
		return c.head
	}
	for w := c.head; w != nil; w = w.next {
		if w.state.CompareAndSwap(pending, redirected) || w.state.Load() == redirected {
			continue
		}
		return w
	}
	return nil
}

// Granted counts a grant of units share units to tenant t at priority
// prio, to a caller that did not wait, and moves its class's virtual
// time on (a waiter's moved when it was popped).
func (q *Queue[G]) Granted(t *budget.Tenant, prio int, units int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	c := q.classOf(t, prio)
	c.grants++
	c.usage += units
	q.charge(c, units)
}

// GrantedTo is Granted for w, a waiter popped and granted.
func (q *Queue[G]) GrantedTo(w *Waiter[G], units int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	w.class.grants++
	w.class.usage += units
}

// Resettled corrects the usage of tenant t at priority prio, and its
// class's virtual time, by delta share units: a settlement of one of its
// leases.
func (q *Queue[G]) Resettled(t *budget.Tenant, prio int, delta int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	c := q.classOf(t, prio)
	c.usage += delta
	q.charge(c, delta)
}

// charge moves c's virtual time on by units share units.
func (q *Queue[G]) charge(c *class[G], units int64) {
	c.vtime += float64(units) / c.weight
	if c.index >= 0 && c.parked == 0 {
		c.lvl.ready.fix(c)
	}
}

// putBack puts w, popped, back at the front of its class, with the
// class's virtual time as before the pop (see PushFront).
func (q *Queue[G]) putBack(w *Waiter[G]) Requeue {
	switch {
	case q.closed:
		return Closed
	case w.left:
		return Left
	}
	if w.class == nil { // never queued before
		w.class = q.classOf(w.Tenant, w.Priority)
		w.was = w.class.vtime
	}
	c := w.class
	w.prev, w.next = nil, c.head
	if c.head != nil {
		c.head.prev = w
	} else {
		c.tail = w
	}
	c.head = w
	w.queued = true
	q.len.Add(1)
	c.vtime = w.was
	switch c.n++; {
	case c.n == 1:
		q.ready(c)
	case c.parked != 0:
		q.parkedN.Add(1)
	default:
		c.lvl.ready.fix(c)
	}
	return Requeued
}

// MustQueue reports whether a caller of tenant t at priority prio that
// has not waited must queue behind the waiters rather than take a
// resource: in the strict order, whenever anyone waits, except waiters
// parked on their own tenant's budgets, which could take nothing now and
// so hold back no one but the callers of their own class (a wake is
// armed for the end of their parking).
func (q *Queue[G]) MustQueue(t *budget.Tenant, prio int) bool {
	if !q.Strict {
		return false
	}
	if n := q.len.Load(); n == 0 || n > q.parkedN.Load() {
		return n > 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.unparkDue()
	if q.len.Load() > q.parkedN.Load() {
		return true
	}
	c := &q.def
	if t != nil || prio != 0 {
		c = q.classes[classKey{t, prio}]
	}
	return c != nil && c.n > 0
}

// classOf returns the class of tenant t at priority prio, made on first
// use.
func (q *Queue[G]) classOf(t *budget.Tenant, prio int) *class[G] {
	if t == nil && prio == 0 {
		if q.def.lvl == nil {
			q.initClass(&q.def, nil, 0)
		}
		return &q.def
	}
	k := classKey{t, prio}
	c := q.classes[k]
	if c == nil {
		if q.classes == nil {
			q.classes = make(map[classKey]*class[G])
		}
		c = &class[G]{}
		q.initClass(c, t, prio)
		q.classes[k] = c
		q.fair.Store(true)
	}
	return c
}

func (q *Queue[G]) initClass(c *class[G], t *budget.Tenant, prio int) {
	c.tenant, c.prio, c.index, c.weight = t, prio, -1, 1
	if t != nil {
		c.weight = float64(t.Weight)
	}
	i := sort.Search(len(q.levels), func(i int) bool { return q.levels[i].prio <= prio })
	if i == len(q.levels) || q.levels[i].prio != prio {
		q.levels = slices.Insert(q.levels, i, &level[G]{prio: prio})
	}
	c.lvl = q.levels[i]
}

// ready makes c, which has just got its first waiter or come back from
// parking, ready to be served, no earlier in virtual time than its level.
func (q *Queue[G]) ready(c *class[G]) {
	if c.parked != 0 {
		q.parkedN.Add(-int64(c.n))
	}
	c.vtime = max(c.vtime, c.lvl.v)
	c.parked = 0
	q.seq++
	c.seq = q.seq
	c.lvl.ready.push(c)
}

// leave takes c, which has no waiter left, out of its heap.
func (q *Queue[G]) leave(c *class[G]) {
	switch {
	case c.index < 0:
	case c.parked != 0:
		q.parked.remove(c)
	default:
		c.lvl.ready.remove(c)
	}
	c.parked = 0
}

// park moves c, which has waiters, to the parked heap until until, and
// reports whether a wake must be armed for it: none is yet for an
// earlier instant.
func (q *Queue[G]) park(c *class[G], until int64) bool {
	if c.parked != 0 {
		q.parked.remove(c)
	} else {
		c.lvl.ready.remove(c)
		q.parkedN.Add(int64(c.n))
	}
	c.parked = max(until, 1)
	q.seq++
	c.seq = q.seq
	q.parked.byTime = true
	q.parked.push(c)
	if q.parkWake != 0 && q.parkWake <= until {
		return false
	}
	q.parkWake = c.parked
	return true
}

// UnparkTenant makes the parked classes of tenant t ready, and reports
// whether there were any: a refund may cover what they wait for. It
// reads every parked class, which only a refund of a tenant with limits
// does.
func (q *Queue[G]) UnparkTenant(t *budget.Tenant) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.aside = q.aside[:0]
	for _, e := range q.parked.items {
		if e.c.tenant == t {
			q.aside = append(q.aside, e.c)
		}
	}
	for _, c := range q.aside {
		q.parked.remove(c)
		q.ready(c)
	}
	n := len(q.aside)
	clear(q.aside)
	q.aside = q.aside[:0]
	return n > 0
}

// unparkDue makes the parked classes whose parking is over ready, and
// returns the time it read (0 if nothing is parked).
func (q *Queue[G]) unparkDue() (now int64) {
	if q.parked.len() == 0 || q.Now == nil {
		return 0
	}
	now = q.Now()
	for q.parked.len() > 0 && q.parked.top().parked <= now {
		c := q.parked.top()
		q.parked.remove(c)
		q.ready(c)
	}
	return now
}
