package waiting

import (
	"fmt"

	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/shard"
	"github.com/crsched/crs/internal/waiting/queue"
)

// Serve hands resources to waiters, oldest first, for as long as sh has
// one and anyone waits, and reports whether it woke anyone. It runs, with
// sh locked, after anything that may have made a resource of sh
// available. Each waiter gets the top of sh or, under GlobalOrder, of a
// shard whose top is better (see betterShard); a giver that cannot read
// every shard serves only committed waiters and sends the others back to
// search (see pop, and docs/ARCHITECTURE.md, Waiting).
//
// Why no waiter is left behind: a giver makes the resource visible in the
// heap (publishing the shard's active count) before it reads the waiter
// count here, and a waiter counts itself before it reads the shards'
// active counts (see Wait). Both are sequentially consistent atomics, so
// at least one of the two sees the other: the giver serves the waiter, or
// the waiter sees the resource and searches again. So a giver must not
// stop while sh has a resource and someone waits, even when another shard
// has a better one: that shard's giver may have served before the waiter
// queued, or its resource may be gone by the time the waiter would get it
// (finding 10 in docs/TESTING.md).
//
// The comparator may panic anywhere in here, in sh or in another shard
// (serveFrom): the hold it was taking for a waiter is undone (see
// shard.Shard.Save), what the step did before serving has taken effect,
// and sh is left broken whichever shard panicked, so that its next user
// serves the waiters (see Repair): its resource is still free.
func (r *Room[T, ID]) Serve(sh *shard.Shard[T, ID]) bool {
	if r.queue.Len() == 0 || sh.Heap.Len() == 0 {
		return false
	}
	sh.Commit()
	// A panic from here on, in sh or another shard, leaves sh broken:
	// its resource is still free, and its next user serves the waiters.
	sh.Risk()
	served := false
	pass := sh.Pass()
	for r.queue.Len() > 0 && sh.Heap.Len() > 0 {
		sure := true
		if r.cfg.Global {
			var o *shard.Shard[T, ID]
			o, sure = r.betterShard(sh)
			if o != nil {
				if o.TryLock() {
					if r.serveFrom(o, sh, sure, pass) {
						served = true
						continue
					}
				} else {
					sure = false
				}
			}
		}
		w := r.pop(sure, pass)
		if w == nil {
			break
		}
		if r.grantTo(sh, w, pass) {
			served = true
		}
	}
	sh.Safe()
	if served && r.cfg.Strict && r.queue.Len() > 0 {
		// The oldest waiter changed here, and sh has nothing for it (or
		// no resource left): another shard may cover its cost now.
		r.Kick(sh.Index)
	}
	return served
}

// ServeAfter is Serve after a change that has taken effect: a release,
// an Add, an Include. A comparator panic while it hands a resource to a
// waiter cannot undo that change, and the caller's operation succeeded,
// so the panic is recovered and counted (Stats.ComparatorPanics) rather
// than sent to a caller who would take it for a failure and might repeat
// the operation: a second Release would free someone else's slot. The
// shard is left broken, and its next operation serves the waiters (see
// Repair).
func (r *Room[T, ID]) ServeAfter(sh *shard.Shard[T, ID]) bool {
	defer r.recovered()
	return r.Serve(sh)
}

// recovered, deferred, stops a comparator panic that no caller can be
// told of, and counts it.
func (r *Room[T, ID]) recovered() {
	if recover() != nil {
		r.panics.Add(1)
	}
}

// pop takes the waiter to serve next in the giver's pass (see
// Queue.PopFor), or, when the giver cannot be sure that it hands out the
// best resource of all shards, the next committed one (see
// Queue.PopCommitted).
func (r *Room[T, ID]) pop(sure bool, pass uint64) *queue.Waiter[Grant[T, ID]] {
	return r.queue.PopFor(pass, !sure)
}

// betterShard returns the shard other than sh that publishes the best
// top strictly better than sh's, or nil, and whether it could read every
// shard's top. Under GlobalOrder a waiter must get the best resource of
// all shards. A shard with a change in progress cannot be read: waiting
// for it while sh's lock is held could deadlock. Requires sh's lock; the
// comparator may panic (see Serve).
func (r *Room[T, ID]) betterShard(sh *shard.Shard[T, ID]) (better *shard.Shard[T, ID], sure bool) {
	bestValue := sh.Best().Value
	sure = true
	for i := range r.cfg.Shards {
		o := &r.cfg.Shards[i]
		if o == sh {
			continue
		}
		n, v, _, ok := o.Peek()
		if !ok {
			sure = false
			continue
		}
		if n != nil && r.cfg.Cmp(v, bestValue) < 0 {
			better, bestValue = o, v
		}
	}
	return better, sure
}

// serveFrom gives a waiter (see pop) the top of o, if it is still better
// than sh's, and reports whether it did. The caller holds sh.mu and took
// o.mu with TryLock (never waiting for it, which could deadlock: another
// giver may hold o and want sh); serveFrom unlocks it. A panic in the
// comparator, here or in grantTo, leaves o broken, so that its next user
// serves the waiters, and sh too (see Serve).
func (r *Room[T, ID]) serveFrom(o, sh *shard.Shard[T, ID], sure bool, pass uint64) bool {
	defer o.Unlock()
	r.Repair(o, nil) // which may serve waiters itself
	top := o.Best()
	if top == nil || r.queue.Len() == 0 {
		return false
	}
	o.Risk()
	served := r.cfg.Cmp(top.Value, sh.Best().Value) < 0 && r.grantFrom(o, sure, pass)
	o.Safe()
	return served
}

// grantFrom gives a waiter (see pop) the top of sh, and reports whether
// it did.
func (r *Room[T, ID]) grantFrom(sh *shard.Shard[T, ID], sure bool, pass uint64) bool {
	w := r.pop(sure, pass)
	return w != nil && r.grantTo(sh, w, pass)
}

// grantTo gives waiter w the top of sh, or with a cost the best resource
// of sh that covers it (see shard.Shard.Covering), spending from its
// tenant's budgets too (Reserve), and reports whether it did. If no
// resource of sh covers the cost, w goes back to the front of its class,
// which this pass then skips (Queue.Skip: it holds back its own class
// only), and the wake of sh is armed for the instant one may; if its
// tenant's budgets fall short, its class is parked until they cover it
// (Queue.Park). If the comparator panics, w goes back to the front so it
// is not forgotten, and the panic continues (to ServeAfter, which
// recovers it, or to a Repair's caller, whose step has not begun); the
// caller has marked sh at risk (see shard.Shard.Risk), so that sh's next
// user serves w. A w whose caller gave up while it was popped is not put
// back: it is sent an empty grant, on which its caller returns (see
// Wait).
func (r *Room[T, ID]) grantTo(sh *shard.Shard[T, ID], w *queue.Waiter[Grant[T, ID]], pass uint64) bool {
	how, until := panicked, int64(0)
	defer func() { r.putBack(w, how, pass, until) }()
	n := sh.Best()
	if w.Cost != nil {
		var at int64
		if n, at = sh.Covering(w.Cost, r.cfg.Host.Now()); n == nil {
			if r.cfg.Profiles.Exceeds(w.Cost) { // an Update or Remove since it queued
				how = granted // answered: not back in the queue
				w.C <- Grant[T, ID]{Err: fmt.Errorf("lease: %w", crserrors.ErrCostExceedsLimits)}
				return true
			}
			how = skipped
			r.wake(sh, at)
			return false
		}
	}
	g := Grant[T, ID]{Cost: w.Cost, Tenant: w.Tenant, Priority: w.Priority}
	if ok, at := r.Reserve(sh, &g); !ok {
		how, until = parked, at
		return false
	}
	r.hold(sh, n, w.Lease, &g)
	how = granted
	if g.Tenant != nil || g.Priority != 0 || r.queue.Fair() {
		r.queue.GrantedTo(w, r.Units(g.Cost)) // before the send: then w is its caller's
	}
	w.C <- g
	r.cfg.Host.Acquired(g.Node)
	return true
}

// What grantTo did with a waiter.
const (
	panicked = iota // the comparator panicked
	granted         // sent a grant or an error
	skipped         // not covered by the giver's shard
	parked          // not covered by its tenant's budgets
)

// putBack puts w, which grantTo could not serve (how), back in the queue
// (see grantTo); when it is left out, it sends it what its caller waits
// for.
func (r *Room[T, ID]) putBack(w *queue.Waiter[Grant[T, ID]], how int, pass uint64, until int64) {
	var rq queue.Requeue
	switch how {
	case granted:
		return
	case skipped:
		rq = r.queue.Skip(w, pass)
	case parked:
		var arm bool
		if rq, arm = r.queue.Park(w, until); arm {
			r.armPark(until)
		}
	default: // the caller marked the shard at risk (see grantTo)
		rq = r.queue.PushFront(w)
	}
	switch rq {
	case queue.Closed:
		w.C <- Grant[T, ID]{Err: crserrors.ErrSchedulerClosed}
	case queue.Left:
		w.C <- Grant[T, ID]{} // nothing: its caller gave up (see Wait)
	}
}

// serveBest serves waiters from the shards a batch went into (added[i]
// nodes into shard i, all of them locked by the caller), each waiter from
// the shard whose top is best then, ties to the lower shard. Under
// GlobalOrder a waiter must get the best of the batch; serving shard by
// shard would give it the best of the first shard. If the comparator
// panics, every shard of the batch is left broken, so that its next user
// serves the waiters (see Repair): each may hold a resource a waiter
// should have had.
func (r *Room[T, ID]) serveBest(added []int) bool {
	r.risk(added, (*shard.Shard[T, ID]).Risk)
	served := false
	var pass uint64
	for r.queue.Len() > 0 {
		best := r.bestOf(added)
		if best < 0 {
			break
		}
		if pass == 0 {
			pass = r.cfg.Shards[best].Pass()
		}
		// The shards the batch did not fill are not compared: a
		// committed waiter cannot be queued beside a resource that was
		// visible before the batch began (see Queue.PopCommitted).
		w := r.queue.PopFor(pass, true)
		if w == nil {
			break
		}
		if r.grantTo(&r.cfg.Shards[best], w, pass) {
			served = true
		}
	}
	r.risk(added, (*shard.Shard[T, ID]).Safe)
	if served && r.cfg.Strict && r.queue.Len() > 0 {
		r.Kick(-1)
	}
	return served
}

// risk calls mark (Risk or Safe) on each shard a batch went into.
func (r *Room[T, ID]) risk(added []int, mark func(*shard.Shard[T, ID])) {
	for i, k := range added {
		if k > 0 {
			mark(&r.cfg.Shards[i])
		}
	}
}

// bestOf returns the shard among those a batch went into (see serveBest)
// whose top is best, ties to the lower shard, or -1 if none has one.
func (r *Room[T, ID]) bestOf(added []int) int {
	best := -1
	var top *node.Node[T, ID]
	for i, k := range added {
		if k == 0 {
			continue
		}
		if n := r.cfg.Shards[i].Best(); n != nil && (top == nil || r.cfg.Cmp(n.Value, top.Value) < 0) {
			best, top = i, n
		}
	}
	return best
}

// ServeBatch serves waiters from the shards a batch went into (added[i]
// nodes into shard i, all of them locked by the caller). The batch is
// in, so a comparator panic here is recovered, as in ServeAfter.
func (r *Room[T, ID]) ServeBatch(added []int) (served bool) {
	if r.cfg.Global {
		defer r.recovered()
		return r.serveBest(added)
	}
	for i, k := range added {
		if k > 0 && r.ServeAfter(&r.cfg.Shards[i]) {
			served = true
		}
	}
	return served
}

// Repair brings sh back to normal before an operation uses it, and
// serves the waiters that a comparator panic kept from its resources
// (see shard.Shard.Repair). only is the node the operation changes, if
// it changes no other. Every operation calls it right after locking sh,
// with the unlock deferred: it runs the comparator, which may panic.
func (r *Room[T, ID]) Repair(sh *shard.Shard[T, ID], only *node.Node[T, ID]) {
	if sh.Repair(only) {
		r.Serve(sh)
	}
}

// Grant takes a hold on n, an active node of sh that covers g.Cost, for
// g's tenant, if the tenant's budgets cover g.Cost too, and reports
// whether it did: the tenant pays in the same step as the resource
// (Reserve), and the grant counts against its share (Granted). It is the
// grant of a caller that does not wait (a waiter's is grantTo's).
// Requires sh's lock.
func (r *Room[T, ID]) Grant(sh *shard.Shard[T, ID], n *node.Node[T, ID], lease bool, g *Grant[T, ID]) bool {
	if g.Tenant == nil && g.Priority == 0 && !r.queue.Fair() {
		r.hold(sh, n, lease, g) // no tenant to pay or count
		return true
	}
	if ok, _ := r.Reserve(sh, g); !ok {
		return false
	}
	r.hold(sh, n, lease, g)
	r.Granted(g)
	return true
}

// hold takes a hold on n for g (shard.Shard.Hold), fills in g, and has
// the host queue the lease's expiry and report the rest. Requires sh's
// lock.
func (r *Room[T, ID]) hold(sh *shard.Shard[T, ID], n *node.Node[T, ID], lease bool, g *Grant[T, ID]) {
	g.Node, g.Value = n, n.Value
	var c shard.Change
	g.Token, g.Deadline, c = sh.Hold(n, lease, g.Cost, g.Tenant, g.Priority, r.clock)
	if g.Deadline != 0 {
		r.cfg.Host.LeaseDue(n, g.Token, g.Deadline)
	}
	if c.Resumed != 0 || c.RestWas != n.RestUntil {
		r.cfg.Host.Report(n, c)
	}
}
