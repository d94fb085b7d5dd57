package shard

import (
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/node"
)

// What the end of a hold does to its resource: the release cooldown,
// the failure count and ejection (Unhold), by the pool's rules (Health).

// Health is the pool's rules for a resource whose hold ends.
type Health struct {
	Ejection        config.Ejection
	ReleaseCooldown time.Duration
}

// Outcome is how a hold ended, for the resource's health.
type Outcome uint8

const (
	Succeeded Outcome = iota // a release: a success, which resets the failure count
	Failed                   // counts toward ejection
	Cooled                   // a cooldown: neither success nor failure
	Reclaimed                // the lease expired: neither
)

// Ending describes the end of a hold: how it went and, for a cooldown,
// how long the resource must rest.
type Ending struct {
	How  Outcome
	Rest time.Duration
}

// NoEvent stands for "no event to emit" where a step may call for one.
// EventAdd is 0, so the zero value cannot.
const NoEvent events.EventType = -1

// Unhold ends one hold on n, applying the pool's health rules in the
// same step; the caller drops the hold's lease record, if any, once it
// returns. A draining node whose last hold this was leaves the pool
// (and the lookup map). It returns what to report, and the event a
// resulting rest calls for (EventSuspend, EventEject) or NoEvent. now
// is read only if a rest may begin or end. Requires s.mu.
func (s *Shard[T, ID]) Unhold(n *node.Node[T, ID], end Ending, now func() int64) (Change, events.EventType) {
	c := Change{RestWas: n.RestUntil}
	if end == (Ending{How: Succeeded}) && s.pool.Health.ReleaseCooldown == 0 &&
		n.State == node.Held && n.Holders <= n.Capacity && n.RestUntil == 0 {
		// The common release, of an anonymous hold or a lease, frees a
		// slot of a full node that does not rest, and so only moves it
		// back into the heap: a branch of its own, since the
		// bookkeeping below measured to cost more than the move. The
		// holder count goes first, since the heap breaks ties by it.
		s.Save(n, SavingHolders)
		n.Holders--
		s.Holders--
		s.Activate(n)
		s.Commit()
		n.ResetFailures()
		return c, NoEvent
	}
	s.Save(n, SavingHolders|SavingHealth)
	back := s.LimitsOnly(n) // n may rest: freeing a slot can leave only its limits in the way
	n.Holders--
	s.Holders--
	s.Recount(n, back)
	failures, ejections := n.Health()
	switch end.How {
	case Succeeded:
		n.ResetFailures()
	case Failed:
		n.SetHealth(failures+1, ejections)
	}
	if n.State == node.Draining {
		s.Commit() // no comparator below
		if n.Holders == 0 {
			s.SetState(n, node.Removed)
			s.nodes.Delete(n.Key) // leaving: the affinity ring lost it at Remove
		}
		return c, NoEvent
	}
	// A rest that is over ended before this release: restAfter would
	// replace it unreported.
	at := now()
	c.resumed(s.ForgetEnded(n, at))
	event := s.restAfter(n, end, at)
	c.resumed(s.Place(n, at))
	s.Commit()
	return c, event
}

// restAfter decides whether n rests after a hold on it ended: ejected when
// its failures reach the threshold and the pool allows another ejection,
// suspended for a cooldown. It returns the event to emit.
//
// A rest for the rate limit or budgets gives way to a suspension or an
// ejection even when that ends sooner: the limits' rest is worked out
// again from the buckets when it ends (see Place), whereas a refund may
// end the limits' rest early, and would end a suspension hidden under it.
func (s *Shard[T, ID]) restAfter(n *node.Node[T, ID], end Ending, now int64) events.EventType {
	if n.Rest == node.RateLimited {
		s.SetRest(n, 0, node.NoRest)
	}
	h := &s.pool.Health
	event := NoEvent
	if failures, _ := n.Health(); end.How == Failed && h.Ejection.Enabled() && failures >= h.Ejection.ConsecutiveFailures &&
		(n.Rest == node.Ejected || s.reserveEjection()) {
		reserved := n.Rest != node.Ejected
		e := n.Extra()
		e.Ejections++
		e.Failures = 0
		if until := node.After(now, h.Ejection.Duration(e.Ejections)); until > n.RestUntil || reserved {
			s.SetRest(n, max(until, n.RestUntil), node.Ejected)
		}
		event = events.EventEject
	}
	if cooldown := max(end.Rest, h.ReleaseCooldown); cooldown > 0 {
		if until := node.After(now, cooldown); until > n.RestUntil {
			s.SetRest(n, until, node.Suspended)
		}
		if event == NoEvent {
			event = events.EventSuspend
		}
	}
	return event
}

// reserveEjection takes one of the pool's ejection slots for a resource
// of s, if any is left: ejection never takes the last resource that is
// neither ejected nor excluded, nor more than MaxEjectedShare of the pool
// (but always allows one, as Envoy does). Slots the step on s released
// count as free.
func (s *Shard[T, ID]) reserveEjection() bool {
	size := s.pool.Size.Load()
	limit := size - s.pool.Excluded.Load() - 1
	if share := s.pool.Health.Ejection.MaxEjectedShare; share > 0 {
		limit = min(limit, max(1, int64(share*float64(size))))
	}
	for {
		cur := s.pool.Ejected.Load()
		if cur-s.unejected >= limit {
			return false
		}
		if s.pool.Ejected.CompareAndSwap(cur, cur+1) {
			return true
		}
	}
}
