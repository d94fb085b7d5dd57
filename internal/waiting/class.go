package waiting

import "github.com/crsched/crs/internal/budget"

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

// classHeap is a binary heap of classes, by virtual time (ready) or by
// the end of their parking (parked), ties to the lower seq.
type classHeap[G any] struct {
	items  []*class[G]
	byTime bool
}

func (h *classHeap[G]) less(a, b *class[G]) bool {
	if h.byTime {
		if a.parked != b.parked {
			return a.parked < b.parked
		}
	} else if a.vtime != b.vtime {
		return a.vtime < b.vtime
	}
	return a.seq < b.seq
}

func (h *classHeap[G]) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].index, h.items[j].index = i, j
}

func (h *classHeap[G]) push(c *class[G]) {
	c.index = len(h.items)
	h.items = append(h.items, c)
	h.up(c.index)
}

// remove takes c, which is in h, out of it.
func (h *classHeap[G]) remove(c *class[G]) {
	i, last := c.index, len(h.items)-1
	if i != last {
		h.swap(i, last)
	}
	h.items[last] = nil
	h.items = h.items[:last]
	c.index = -1
	if i != last {
		h.fix(i)
	}
}

// fix restores the order after the key of the class at i changed.
func (h *classHeap[G]) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *classHeap[G]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.items[i], h.items[p]) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *classHeap[G]) down(i int) bool {
	start, n := i, len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h.less(h.items[r], h.items[l]) {
			m = r
		}
		if !h.less(h.items[m], h.items[i]) {
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
