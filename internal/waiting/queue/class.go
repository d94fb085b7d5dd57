package queue

import (
	"cmp"
	"slices"

	"github.com/crsched/crs/internal/budget"
)

// The structures the order of service (order.go) works on: a class is
// the waiters of one tenant at one priority, first come first served; a
// level is the classes of one priority that are ready to be served, in
// a heap by virtual time; the parked classes, in a heap by when their
// tenant's budgets cover their first waiter's cost. All of it is guarded
// by the queue's mu.

// class is the waiters of one tenant at one priority, oldest first.
type class[G any] struct {
	tenant     *budget.Tenant // nil: the default tenant of a pool without Tenants
	prio       int
	weight     float64
	lvl        *level[G]
	head, tail *Waiter[G]
	n          int // waiters queued
	// vtime is the class's virtual time: while it is ready, the start
	// tag of its first waiter; otherwise the finish tag of its last
	// grant. A grant of u share units adds u/weight.
	vtime float64
	seq   uint64 // when it last became ready or parked: ties go to the earlier
	// index is the class's place in its level's heap, or in the parked
	// heap when parked is set; -1 in neither (it has no waiters).
	index  int
	parked int64 // until when its tenant's budgets fall short; 0: ready
	skip   uint64
	grants uint64 // grants to the class, and their share units
	usage  int64
}

// level is the classes of one priority.
type level[G any] struct {
	prio  int
	ready classHeap[G]
	// v is the level's virtual time: the start tag of the class served
	// last. A class that becomes ready starts no earlier, so a tenant
	// back from idle has banked no credit.
	v float64
}

// arity is the classHeap's: a sift moves a class's index, in the class,
// once a level, and with thousands of classes each is a cache miss, so
// fewer levels of more children (whose keys sit side by side in items)
// cost less.
const arity = 4

// classHeap is a heap of classes, by virtual time (ready) or by the end
// of their parking (parked), ties to the lower seq. Each entry carries
// its class's key, so that a sift compares without reading the classes:
// with thousands of tenants waiting, those reads would be cache misses.
type classHeap[G any] struct {
	items  []entry[G]
	byTime bool
}

type entry[G any] struct {
	vtime float64
	at    int64
	seq   uint64
	c     *class[G]
}

func (h *classHeap[G]) less(i, j int) bool {
	a, b := &h.items[i], &h.items[j]
	if h.byTime {
		if a.at != b.at {
			return a.at < b.at
		}
	} else if a.vtime != b.vtime {
		return a.vtime < b.vtime
	}
	return a.seq < b.seq
}

func (h *classHeap[G]) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].c.index, h.items[j].c.index = i, j
}

// top is the class with the least key; the heap must not be empty.
func (h *classHeap[G]) top() *class[G] { return h.items[0].c }

func (h *classHeap[G]) len() int { return len(h.items) }

func (h *classHeap[G]) push(c *class[G]) {
	c.index = len(h.items)
	h.items = append(h.items, entry[G]{vtime: c.vtime, at: c.parked, seq: c.seq, c: c})
	h.up(c.index)
}

// remove takes c, which is in h, out of it.
func (h *classHeap[G]) remove(c *class[G]) {
	i, last := c.index, len(h.items)-1
	if i != last {
		h.swap(i, last)
	}
	h.items[last] = entry[G]{}
	h.items = h.items[:last]
	c.index = -1
	if i != last {
		h.sift(i)
	}
}

// fix restores the order after the key of c, which is in h, changed.
func (h *classHeap[G]) fix(c *class[G]) {
	e := &h.items[c.index]
	e.vtime, e.at, e.seq = c.vtime, c.parked, c.seq
	h.sift(c.index)
}

func (h *classHeap[G]) sift(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *classHeap[G]) up(i int) {
	for i > 0 {
		p := (i - 1) / arity
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *classHeap[G]) down(i int) bool {
	start, n := i, len(h.items)
	for {
		first := arity*i + 1
		if first >= n {
			break
		}
		m := first
		for c := first + 1; c < min(first+arity, n); c++ {
			if h.less(c, m) {
				m = c
			}
		}
		if !h.less(m, i) {
			break
		}
		h.swap(i, m)
		i = m
	}
	return i > start
}

// classKey names a class other than the default one.
type classKey struct {
	tenant *budget.Tenant
	prio   int
}

// ClassStats is one class's figures: its tenant's name, its priority,
// the callers waiting in it, its grants and their share units.
type ClassStats struct {
	Tenant   string
	Priority int
	Waiters  int
	Grants   uint64
	Usage    int64
}

// Classes returns the figures of every class, by tenant and priority, or
// nil while no tenant or priority is in use.
func (q *Queue[G]) Classes() []ClassStats {
	if !q.Fair() {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []ClassStats
	for _, c := range q.all() {
		if c.lvl == nil {
			continue
		}
		name := ""
		if c.tenant != nil {
			name = c.tenant.Name
		}
		out = append(out, ClassStats{Tenant: name, Priority: c.prio, Waiters: c.n, Grants: c.grants, Usage: c.usage})
	}
	slices.SortFunc(out, func(a, b ClassStats) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(b.Priority, a.Priority))
	})
	return out
}
