package scheduler

import (
	"time"

	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/shard"
)

// outcome is how a hold ended, for the resource's health.
type outcome uint8

const (
	succeeded outcome = iota // Release: a success, which resets the failure count
	failed                   // Lease.Fail: counts toward ejection
	cooled                   // Lease.Cooldown: neither success nor failure
	reclaimed                // the lease expired: neither
)

// ending describes the end of a hold: how it went and, for Cooldown, how
// long the resource must rest.
type ending struct {
	how  outcome
	rest time.Duration
}

// restAfter decides whether n rests after a hold on it ended: ejected when
// its failures reach the threshold and the pool allows another ejection,
// suspended for a cooldown. It reports the event to emit. Requires sh.mu.
//
// A rest for the rate limit or budgets gives way to a suspension or an
// ejection even when that ends sooner: the limits' rest is worked out
// again from the buckets when it ends (see place), whereas a refund may
// end the limits' rest early, and would end a suspension hidden under it.
func (s *Scheduler[T, ID]) restAfter(sh *shard.Shard[T, ID], n *node.Node[T, ID], end ending) events.EventType {
	if n.Rest == node.RateLimited {
		sh.SetRest(n, 0, node.NoRest)
	}
	event := noEvent
	if failures, _ := n.Health(); end.how == failed && s.ejection.Enabled() && failures >= s.ejection.ConsecutiveFailures &&
		(n.Rest == node.Ejected || s.reserveEjection(sh)) {
		reserved := n.Rest != node.Ejected
		e := n.Extra()
		e.Ejections++
		e.Failures = 0
		if until := s.after(s.ejection.Duration(e.Ejections)); until > n.RestUntil || reserved {
			sh.SetRest(n, max(until, n.RestUntil), node.Ejected)
		}
		event = events.EventEject
	}
	if cooldown := max(end.rest, s.releaseCooldown); cooldown > 0 {
		if until := s.after(cooldown); until > n.RestUntil {
			sh.SetRest(n, until, node.Suspended)
		}
		if event == noEvent {
			event = events.EventSuspend
		}
	}
	return event
}

// reserveEjection takes one of the pool's ejection slots for a resource
// of sh, if any is left: ejection never takes the last resource that is
// neither ejected nor excluded, nor more than MaxEjectedShare of the pool
// (but always allows one, as Envoy does). Slots the step on sh released
// count as free. Requires sh.mu.
func (s *Scheduler[T, ID]) reserveEjection(sh *shard.Shard[T, ID]) bool {
	size := s.size.Load()
	limit := size - s.pool.Excluded.Load() - 1
	if share := s.ejection.MaxEjectedShare; share > 0 {
		limit = min(limit, max(1, int64(share*float64(size))))
	}
	for {
		cur := s.pool.Ejected.Load()
		if cur-sh.Unejected() >= limit {
			return false
		}
		if s.pool.Ejected.CompareAndSwap(cur, cur+1) {
			return true
		}
	}
}

// count adds an ended hold to the health totals.
func (s *Scheduler[T, ID]) count(end ending, event events.EventType) {
	if end.how == failed {
		s.totals.failures.Add(1)
	}
	switch event {
	case events.EventEject:
		s.totals.ejections.Add(1)
	case events.EventSuspend:
		s.totals.suspensions.Add(1)
	}
}
