package waiting

import (
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/shard"
	"github.com/crsched/crs/internal/waiting/queue"
)

// With budgets, a waiter may wait while resources are active: their
// budgets are short of its cost. Nothing is released then to serve it,
// so the scheduler's timer does (Woken), at the instant a shard's budgets
// first cover the oldest waiter's cost (wake), or at once when the oldest
// waiter changed where no giver serves it (Kick).

// wake makes the timer serve sh's waiters at at, when a budget of sh may
// cover the oldest waiter's cost. It keeps one wake per shard armed, the
// earliest. Requires sh's lock.
func (r *Room[T, ID]) wake(sh *shard.Shard[T, ID], at int64) {
	if at == node.Never || (sh.WakeAt != 0 && sh.WakeAt <= at) {
		return
	}
	sh.WakeAt = at
	r.cfg.Host.Wake(sh.Index, at)
}

// Kick makes the timer serve the waiters of every shard but skip now:
// the oldest waiter changed where no giver serves it (it left, or the one
// before it was served from shard skip, which then armed its own wake),
// and another shard may cover its cost. The caller holds no lock, or
// shard skip's.
func (r *Room[T, ID]) Kick(skip int) {
	now := r.cfg.Host.Now()
	for i := range r.cfg.Shards {
		if i != skip {
			r.cfg.Host.Wake(i, now)
		}
	}
}

// Woken serves sh's waiters at a wake (see wake, Kick), on the timer's
// goroutine.
func (r *Room[T, ID]) Woken(sh *shard.Shard[T, ID]) {
	sh.Lock()
	defer sh.Unlock()
	r.Repair(sh, nil)
	if sh.WakeAt <= r.cfg.Host.Now() {
		sh.WakeAt = 0
	}
	r.Serve(sh)
	if at, arm := r.queue.NextPark(); arm {
		r.armPark(at)
	}
}

// probe is the check of the first waiter of a class, w, just queued:
// whether its tenant's budgets and some shard's resource cover its cost
// now. If its tenant's do not, it parks the class until they do; if no
// resource does, it arms each shard's wake for the instant its budgets
// first will, so that the caller, committed, is served then without
// polling.
func (r *Room[T, ID]) probe(w *queue.Waiter[Grant[T, ID]]) (covered bool) {
	if ok, until := r.TenantCovers(w.Tenant, w.Cost); !ok {
		if r.queue.ParkQueued(w, until) {
			r.armPark(until)
		}
		return false
	}
	cost := w.Cost
	for i := range r.cfg.Shards {
		sh := &r.cfg.Shards[i]
		func() {
			sh.Lock()
			defer sh.Unlock()
			r.Repair(sh, nil)
			n, at := sh.Covering(cost, r.cfg.Host.Now())
			if n != nil {
				covered = true
				return
			}
			r.wake(sh, at)
		}()
		if covered {
			return true
		}
	}
	return false
}

// limitsHold reports, for a caller just committed to waiting, whether
// limits keep a resource with a free slot from the oldest waiter: one
// rests for them alone (see shard.Shard.LimitsOnly) or, with budgets, one
// is active, which the strict order would have handed to the oldest
// waiter were its budgets not short of that waiter's cost. It reads no
// lock, so a change under way may make it miss or count one wait.
func (r *Room[T, ID]) limitsHold() bool {
	for i := range r.cfg.Shards {
		sh := &r.cfg.Shards[i]
		if sh.HeldBack.Load() > 0 || r.cfg.Budgeted && sh.Active.Load() > 0 {
			return true
		}
	}
	return false
}
