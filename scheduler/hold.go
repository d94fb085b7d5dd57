package scheduler

import (
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/waitq"
)

// grant is what an acquiring caller receives: the resource's value, and
// for a lease the token that identifies it. A grant sent to a waiter at
// Shutdown carries only err.
type grant[T any, ID comparable] struct {
	node     *node.Node[T, ID]
	token    uint64 // 0 unless a lease
	deadline int64  // the lease's deadline; 0: none
	value    T
	err      error
}

// hold gives the caller one hold on n, the top of sh: a lease when lease is
// set; otherwise an anonymous hold under the Exclusive policy, and nothing
// under Shared (a shared resource is not held, only read). Requires sh.mu.
func (s *Scheduler[T, ID]) hold(sh *shard[T, ID], n *node.Node[T, ID], lease bool) grant[T, ID] {
	g := grant[T, ID]{node: n, value: n.Value}
	if !lease && !sh.exclusive {
		return g
	}
	var deadline int64
	if lease && s.leaseTTL > 0 {
		deadline = s.now() + int64(s.leaseTTL)
	}
	n.Holders++
	sh.holders++
	if lease {
		n.Issued++
		g.token = n.Issued
		n.Leases = append(n.Leases, node.Lease{Token: g.token, Deadline: deadline})
	} else {
		n.Anonymous++
	}
	done := false
	defer func() {
		if !done {
			n.Holders--
			sh.holders--
			if lease {
				n.Leases = n.Leases[:len(n.Leases)-1]
			} else {
				n.Anonymous--
			}
		}
	}()
	sh.place(n)
	done = true
	if deadline != 0 {
		g.deadline = deadline
		s.expiry.schedule(deadline, n, g.token)
	}
	return g
}

// unhold ends one hold on n: the lease at position i of n.Leases, or an
// anonymous hold when i < 0. A draining node whose last hold this was
// leaves the scheduler. Requires sh.mu.
func (s *Scheduler[T, ID]) unhold(sh *shard[T, ID], n *node.Node[T, ID], i int) {
	var ended node.Lease
	n.Holders--
	sh.holders--
	if i >= 0 {
		ended = n.Leases[i]
		n.DropLease(i)
	} else {
		n.Anonymous--
	}
	if n.State == node.Draining {
		if n.Holders == 0 {
			sh.setState(n, node.Removed)
			s.nodes.Delete(n.Key)
		}
		return
	}
	done := false
	defer func() {
		if !done {
			n.Holders++
			sh.holders++
			if i >= 0 {
				n.Leases = append(n.Leases, ended)
			} else {
				n.Anonymous++
			}
		}
	}()
	sh.place(n)
	done = true
}

// serve hands the best resources of sh to waiters, oldest first, for as
// long as both exist, and reports whether it woke anyone. It runs, with
// sh.mu held, after anything that may have made a resource of sh
// available.
//
// Why no waiter is left behind: a giver makes the resource visible in the
// heap (publishing the shard's active count) before it reads the waiter
// count here, and a waiter counts itself before it sweeps the shards once
// more (see obtain). Both are sequentially consistent atomics, so at least
// one of the two sees the other: the giver serves the waiter, or the
// waiter's sweep finds the resource.
func (s *Scheduler[T, ID]) serve(sh *shard[T, ID]) bool {
	served := false
	for s.waiters.Len() > 0 && sh.heap.Len() > 0 {
		w := s.waiters.Pop()
		if w == nil {
			break
		}
		s.grantTo(sh, w)
		served = true
	}
	return served
}

// grantTo gives waiter w the top of sh. If the comparator panics, w goes
// back to the front of the queue so it is not forgotten, the shard is
// marked so that its next user serves it, and the panic continues to the
// caller that made the resource available (whose own operation is done).
func (s *Scheduler[T, ID]) grantTo(sh *shard[T, ID], w *waitq.Waiter[grant[T, ID]]) {
	granted := false
	defer func() {
		if granted {
			return
		}
		sh.unserved = true
		if !s.waiters.PushFront(w) {
			w.C <- grant[T, ID]{err: crserrors.ErrSchedulerClosed}
		}
	}()
	g := s.hold(sh, sh.heap.Top(), w.Lease)
	granted = true
	w.C <- g
	s.emit(events.EventAcquire, g.node.Key)
}

// mend brings sh back to normal after a comparator panic in an earlier
// operation: it rebuilds the heap order and serves the waiters that the
// panic kept from being served. Every operation calls it right after
// taking sh.mu; it runs the comparator, so the unlock must already be
// deferred.
func (s *Scheduler[T, ID]) mend(sh *shard[T, ID]) {
	sh.repair()
	if sh.unserved {
		sh.unserved = false
		s.serve(sh)
	}
}

// giveBack ends a hold that its receiver no longer wants: a waiter whose
// context ended at the instant it was served, or one that was served twice.
func (s *Scheduler[T, ID]) giveBack(g grant[T, ID]) {
	if g.token == 0 && !s.shards[g.node.Shard].exclusive {
		return // a shared, non-lease grant holds nothing
	}
	_ = s.endHold(g.node, g.token, 0, events.EventRelease)
}
