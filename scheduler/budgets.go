package scheduler

import (
	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/node"
)

// limitsOf runs the user's Limits function, outside any lock, and checks
// what it returns.
func (s *Scheduler[T, ID]) limitsOf(v T) ([]config.Limit, error) {
	limits := s.limits(v)
	if err := config.ValidateLimits(limits); err != nil {
		return nil, err
	}
	return limits, nil
}

// meter takes what a hold on n costs: a rate-limit token, and cost from
// its budgets, which must cover it (Budgets.Fits); and starts the rest that
// leaves n in, if any. A hold undone by a panic gets it all back from
// its undo (see undo). Requires sh.mu.
func meter[T any, ID comparable](sh *shard[T, ID], n *node.Node[T, ID], cost config.Cost) {
	now := sh.now()
	var next int64
	if n.Limited() {
		next = n.Extra().Bucket.Spend(now)
	}
	if bs := n.Budgets(); len(bs) > 0 {
		bs.Take(cost, now)
		next = max(next, bs.Rest(now))
		n.SetFullAt(bs.FullAt(now))
	}
	if next > n.RestUntil {
		sh.setRest(n, next, node.RateLimited)
	}
}

// limitRest is until when n must rest for its rate limit and budgets, as
// of now, or 0.
func limitRest[T any, ID comparable](n *node.Node[T, ID], now int64) int64 {
	var next int64
	if n.Limited() {
		next = n.Extra().Bucket.Empty(now)
	}
	return max(next, n.Budgets().Rest(now))
}

// setLimitRest makes n rest for its limits until next (see limitRest),
// or ends such a rest when next is 0: a refund, a larger Max or a faster
// rate brings the end forward. A suspension or an ejection is kept as it
// is, whichever ends later: when it ends, place checks the limits again,
// so a shorter one hands over to the limits' rest, and the end of a
// longer one is never forgotten under a limit's rest that a refund then
// cuts short. It does not move n: place does.
func setLimitRest[T any, ID comparable](sh *shard[T, ID], n *node.Node[T, ID], next int64) {
	switch {
	case n.Rest == node.Suspended || n.Rest == node.Ejected:
	case next == 0:
		if n.Rest == node.RateLimited {
			sh.setRest(n, 0, node.NoRest)
		}
	default:
		sh.setRest(n, next, node.RateLimited)
	}
}
