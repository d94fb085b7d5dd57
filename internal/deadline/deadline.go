// Package deadline is a min-heap of items keyed by a deadline, for the
// scheduler's single expiry timer.
package deadline

// Entry is an item due at At (nanoseconds on the scheduler's clock).
type Entry[E any] struct {
	At   int64
	Item E
}

// Queue orders entries by deadline, earliest first. It is not safe for
// concurrent use.
type Queue[E any] struct {
	entries []Entry[E]
}

// Len is the number of entries.
func (q *Queue[E]) Len() int { return len(q.entries) }

// Next returns the earliest deadline; the queue must not be empty.
func (q *Queue[E]) Next() int64 { return q.entries[0].At }

// Push adds an entry.
func (q *Queue[E]) Push(at int64, item E) {
	q.entries = append(q.entries, Entry[E]{At: at, Item: item})
	for i := len(q.entries) - 1; i > 0; {
		parent := (i - 1) / 2
		if q.entries[parent].At <= q.entries[i].At {
			break
		}
		q.entries[i], q.entries[parent] = q.entries[parent], q.entries[i]
		i = parent
	}
}

// PopDue removes the entries due at or before now and appends them to dst.
func (q *Queue[E]) PopDue(now int64, dst []Entry[E]) []Entry[E] {
	for len(q.entries) > 0 && q.entries[0].At <= now {
		dst = append(dst, q.pop())
	}
	return dst
}

func (q *Queue[E]) pop() Entry[E] {
	top := q.entries[0]
	last := len(q.entries) - 1
	q.entries[0] = q.entries[last]
	q.entries[last] = Entry[E]{}
	q.entries = q.entries[:last]
	q.down(0)
	return top
}

// down sifts the entry at i down to its place.
func (q *Queue[E]) down(i int) {
	for {
		least := i
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < len(q.entries) && q.entries[c].At < q.entries[least].At {
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

// Filter keeps only the entries for which keep returns true, in O(n).
func (q *Queue[E]) Filter(keep func(Entry[E]) bool) {
	kept := q.entries[:0]
	for _, e := range q.entries {
		if keep(e) {
			kept = append(kept, e)
		}
	}
	clear(q.entries[len(kept):]) // let dropped items be collected
	q.entries = kept
	for i := len(kept)/2 - 1; i >= 0; i-- {
		q.down(i)
	}
}

// Entries returns the entries, in no particular order (for tests and
// assertions; do not change them).
func (q *Queue[E]) Entries() []Entry[E] { return q.entries }

// Has reports whether an entry satisfies match (a linear scan, for tests
// and assertions).
func (q *Queue[E]) Has(match func(E) bool) bool {
	for _, e := range q.entries {
		if match(e.Item) {
			return true
		}
	}
	return false
}
