package shard

import (
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/node"
)

// The pool's rules for a resource whose hold ends (Health): the release
// cooldown, the failure count and ejection, which Unhold applies.

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
