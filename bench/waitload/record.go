package waitload

import (
	"sync"
	"sync/atomic"
)

// slot is the harness's record of one resource. holders and lastRelease
// are read by whoever acquires the resource next, so they are atomics that
// do not rely on the pool's own synchronisation; the rest is written only
// by the current holder, under mu so that a broken pool cannot corrupt the
// record it is being caught by. mu is never contended when the pool is
// correct, so it costs a few nanoseconds per request.
type slot struct {
	// holders is incremented right after acquire and decremented right
	// before release: any value but 1 after the increment means the
	// resource was handed to two holders at once.
	holders atomic.Int32
	// lastRelease is when the last holder started releasing it, in the
	// harness's clock (nanoseconds since its epoch); 0: never.
	lastRelease atomic.Int64

	mu       sync.Mutex
	served   int64   // grants inside the window
	busy     int64   // hold time inside the window, ns
	holdSum  int64   // full hold time of the grants inside the window, ns
	handoffs []int64 // ns from a release to the next holder's return
	_        [64]byte
}

// window is the measured interval, in the harness's clock. Grants that
// return inside it count; hold time is clipped to it.
type window struct{ start, stop int64 }

// grant is one request's timeline, as recorded by its worker.
type grant struct {
	began    int64 // before calling acquire
	got      int64 // acquire returned
	released int64 // the hold ended; release is about to be called
	// previous is the resource's lastRelease when this grant observed
	// it: a hand-off from that release if the request was already
	// waiting then (previous > began).
	previous int64
}

// record adds g to the slot if it returned inside w.
func (s *slot) record(g grant, w window) {
	if g.got < w.start || g.got >= w.stop {
		return
	}
	end := min(g.released, w.stop)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.served++
	s.busy += max(end-g.got, 0)
	s.holdSum += g.released - g.got
	if g.previous > g.began {
		s.handoffs = append(s.handoffs, g.got-g.previous)
	}
}

// fifo counts grants served out of order. Each request takes a ticket from
// an atomic counter just before it calls acquire; on return it compares
// its ticket with the largest ticket returned so far. A smaller one is an
// inversion: a request that asked later got in first. The displacement is
// how many tickets later the overtaking request asked.
//
// The measure is an upper bound on the pool's own unfairness, not the
// unfairness itself: taking the ticket and joining the pool's queue are
// two steps, not one atomic action. A goroutine descheduled between them
// joins after requests with larger tickets, and two waiters woken by two
// near-simultaneous releases may return in either order. Both show up as
// inversions even for a strictly FIFO pool. Descheduling is rare in the
// steady state but the rule when the gate opens: 10,000 goroutines take
// tickets at once and then queue on the pool's lock, and a pool whose
// lock parks goroutines (sync.Mutex) reorders them wholesale, while one
// whose lock only spins or blocks the thread (the runtime's channel lock)
// keeps them nearly in order. Hence two counters: one over every grant in
// the window, and one over the requests that also began in it, which the
// burst cannot reach. Inversions there, beyond a handful of small
// displacement, point at the pool itself (barging).
type fifo struct {
	grants     atomic.Int64
	maxGranted atomic.Uint64
	inversions atomic.Int64
	maxDisp    atomic.Uint64
}

// granted notes that the request with ticket t returned from acquire.
func (f *fifo) granted(t uint64) {
	f.grants.Add(1)
	for {
		m := f.maxGranted.Load()
		if t < m {
			f.inversions.Add(1)
			d := m - t
			for {
				old := f.maxDisp.Load()
				if d <= old || f.maxDisp.CompareAndSwap(old, d) {
					return
				}
			}
		}
		if f.maxGranted.CompareAndSwap(m, t) {
			return
		}
	}
}
