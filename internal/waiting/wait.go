package waiting

import (
	"context"
	"fmt"

	"github.com/crsched/crs/acquire"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/waiting/queue"
)

// Wait is the wait of a caller whose search (see Host.Search) found no
// resource: it queues the caller and waits until it is served or ctx
// ends, or, when a resource turns up before the caller commits to
// waiting, leaves the queue and searches again. With id set the caller
// acquires by affinity; start is the shard the strategy picked.
//
// A waiter never holds two resources and never gives one back: a resource
// given back would be held, for a moment, by no caller, and another caller
// could fail to find it after the giver returned. So after queueing, when
// a resource turns out to be available after all, the waiter leaves the
// queue and searches again rather than taking it while still queued; and
// a waiter served at the instant its context ends keeps the resource.
//
// In the strict order (with budgets, see order.go) a queued caller
// searches again only as the first of its class (the oldest, without
// tenants or priorities). A resource may then be active while callers
// wait, its budgets short of a class's first waiter's cost: that waiter
// arms the wakes (see probe), and whoever makes it the first without
// serving it kicks them (see Kick).
//
// ask is what the caller asks for: its Cost, Tenant and Priority.
func (r *Room[T, ID]) Wait(ctx context.Context, start int, id acquire.AffinityIdentifier, lease bool, ask Grant[T, ID]) (Grant[T, ID], error) {
	cost := ask.Cost
	var none Grant[T, ID]
	var w *queue.Waiter[Grant[T, ID]]
	defer func() {
		// Every return below, and a panic in Search, comes with w in no
		// queue and its grant, if a giver popped it, received: no giver
		// has it any more (see the queue's doc).
		if w != nil {
			r.queue.Put(w)
		}
	}()
	for {
		if cost != nil && r.cfg.Profiles.Exceeds(cost) {
			return none, fmt.Errorf("lease: %w", crserrors.ErrCostExceedsLimits)
		}
		if w == nil {
			w = r.queue.Get(lease)
			w.Cost, w.Tenant, w.Priority, w.Units = cost, ask.Tenant, ask.Priority, r.Units(cost)
		}
		r.step(BeforeQueue)
		if !r.queue.Push(w) {
			return none, crserrors.ErrSchedulerClosed
		}
		r.step(Queued)
		oldest, stays := r.stay(w)
		if stays {
			return r.await(ctx, w)
		}
		if !r.queue.Remove(w) { // served meanwhile
			if g := <-w.C; g.Node != nil || g.Err != nil {
				return g, g.Err
			}
			// Popped by a giver that could not serve it: search again.
		}
		var g Grant[T, ID]
		found := false
		if oldest || !r.MustQueue(&ask) { // as the oldest, it goes first
			g, found = r.cfg.Host.Search(start, id, lease, ask)
		}
		if oldest && r.queue.Len() > 0 {
			r.Kick(-1) // it left the queue as its oldest: the next one has probed nothing
		}
		if found {
			return g, nil
		}
	}
}

// stay is the check of a caller just queued, w: givers see it from now
// on, but a resource that became available before then was not offered
// to it (see Serve), so it searches again if there is one, and so too if
// a giver has told it to (Waiter.Commit fails: see Queue.PopCommitted).
// Otherwise it commits to waiting. It reports whether the caller is the
// first of its class (in the strict order) and whether it stays in the
// queue.
func (r *Room[T, ID]) stay(w *queue.Waiter[Grant[T, ID]]) (oldest, stays bool) {
	if r.cfg.Strict {
		if oldest = r.queue.First(w); oldest && r.probe(w) {
			return oldest, false
		}
	} else if r.anyActive() {
		return false, false
	}
	r.step(Checked)
	if !w.Commit() {
		return oldest, false
	}
	r.step(Committed)
	if r.cfg.Limited && r.limitsHold() {
		r.limitWaits.Add(1)
	}
	return oldest, true
}

// await waits for the grant of w, a caller committed to the queue, until
// ctx ends.
func (r *Room[T, ID]) await(ctx context.Context, w *queue.Waiter[Grant[T, ID]]) (Grant[T, ID], error) {
	var none Grant[T, ID]
	began := r.cfg.Clock.Now()
	select {
	case g := <-w.C:
		r.queue.Waited(r.cfg.Clock.Now().Sub(began), false)
		return g, g.Err
	case <-ctx.Done():
		// A giver that popped this waiter but could not serve it sends
		// it nothing (no node, no error) once it finds it gone.
		removed := r.queue.Remove(w)
		r.step(GaveUp)
		if !removed {
			if g := <-w.C; g.Node != nil || g.Err != nil {
				// Served at the instant the context ended: the hold is
				// the caller's already, and handing it back would leave
				// the resource, for a moment, held by no one.
				r.queue.Waited(r.cfg.Clock.Now().Sub(began), false)
				return g, g.Err
			}
		}
		r.queue.Waited(r.cfg.Clock.Now().Sub(began), true)
		if r.cfg.Strict && r.queue.Len() > 0 {
			r.Kick(-1) // this caller may have been the first of its class
		}
		return none, fmt.Errorf("acquire: waiting: %w", ctx.Err())
	}
}

// step runs the test hook, if any.
func (r *Room[T, ID]) step(at Step) {
	if r.Hook != nil {
		r.Hook(at)
	}
}

// anyActive reports whether some shard has an active resource.
func (r *Room[T, ID]) anyActive() bool {
	for i := range r.cfg.Shards {
		if r.cfg.Shards[i].Active.Load() > 0 {
			return true
		}
	}
	return false
}
