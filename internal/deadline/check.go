package deadline

import "fmt"

// Len is the number of queued entries, live or marked dropped.
func (t *Timer[N]) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.queue.len()
}

// Check verifies the marks, for a scheduler's invariant checks: each
// dropped mark stands for an entry in the queue, and each deadline live
// reports (every lease's, rest's) still to come has an entry that is not
// marked. live must not use t.
func (t *Timer[N]) Check(live func(yield func(at int64, e Entry[N]))) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	queued := make(map[due[N]]int)
	for _, d := range t.queue.entries {
		queued[d]++
	}
	sum := 0
	for d, k := range t.dropped {
		if k > queued[d] {
			return fmt.Errorf("deadline: %d marks dropped for %d queued entries of %+v at %d", k, queued[d], d.entry, d.at)
		}
		sum += k
	}
	if sum != t.dropping {
		return fmt.Errorf("deadline: %d marks, counted as %d", sum, t.dropping)
	}
	if t.closed {
		return nil
	}
	var err error
	live(func(at int64, e Entry[N]) {
		d := due[N]{at, e}
		if err == nil && at != 0 && at != Never && at > t.popped && queued[d] <= t.dropped[d] {
			err = fmt.Errorf("deadline: %+v due at %d has no live entry", e, at)
		}
	})
	return err
}

// Pending reports whether an entry equal to e is queued, dropped or not.
func (t *Timer[N]) Pending(e Entry[N]) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, d := range t.queue.entries {
		if d.entry == e {
			return true
		}
	}
	return false
}
