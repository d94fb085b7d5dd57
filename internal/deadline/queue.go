package deadline

// queue orders entries by deadline, earliest first: a binary min-heap.
// Guarded by its Timer's mu.
type queue[N comparable] struct {
	entries []due[N]
}

func (q *queue[N]) len() int { return len(q.entries) }

// next is the earliest deadline; the queue must not be empty.
func (q *queue[N]) next() int64 { return q.entries[0].at }

func (q *queue[N]) push(d due[N]) {
	q.entries = append(q.entries, d)
	for i := len(q.entries) - 1; i > 0; {
		parent := (i - 1) / 2
		if q.entries[parent].at <= q.entries[i].at {
			break
		}
		q.entries[i], q.entries[parent] = q.entries[parent], q.entries[i]
		i = parent
	}
}

// pop takes the earliest entry out; the queue must not be empty.
func (q *queue[N]) pop() due[N] {
	top := q.entries[0]
	last := len(q.entries) - 1
	q.entries[0] = q.entries[last]
	q.entries[last] = due[N]{}
	q.entries = q.entries[:last]
	q.down(0)
	return top
}

// down sifts the entry at i down to its place.
func (q *queue[N]) down(i int) {
	for {
		least := i
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < len(q.entries) && q.entries[c].at < q.entries[least].at {
				least = c
			}
		}
		if least == i {
			return
		}
		q.entries[i], q.entries[least] = q.entries[least], q.entries[i]
		i = least
	}
}

// filter keeps only the entries for which keep returns true, in O(n).
func (q *queue[N]) filter(keep func(due[N]) bool) {
	kept := q.entries[:0]
	for _, d := range q.entries {
		if keep(d) {
			kept = append(kept, d)
		}
	}
	clear(q.entries[len(kept):]) // let dropped entries' nodes be collected
	q.entries = kept
	for i := len(kept)/2 - 1; i >= 0; i-- {
		q.down(i)
	}
}
