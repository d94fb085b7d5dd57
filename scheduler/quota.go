package scheduler

import (
	"slices"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/bucket"
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

// newQuotas makes full buckets for limits, as of now, born at born (see
// node.Quota.Born). nil for no limits.
func newQuotas(limits []config.Limit, now int64, born uint64) []node.Quota {
	if len(limits) == 0 {
		return nil
	}
	qs := make([]node.Quota, len(limits))
	for i, l := range limits {
		qs[i] = node.Quota{Name: l.Name, Bucket: bucket.New(l, now), Born: born}
	}
	return qs
}

// retuned returns n's budgets for new limits, as of now: a bucket whose
// name stays keeps its level (bucket.Resize), a new one starts full and is
// born now, a dropped one goes. n's own slice is left alone, so that the
// caller can undo. Requires n's shard lock.
func retuned[T any, ID comparable](n *node.Node[T, ID], limits []config.Limit, now int64) []node.Quota {
	if len(limits) == 0 {
		return nil
	}
	old, born := n.Quotas(), n.Extra().Issued
	qs := make([]node.Quota, len(limits))
	for i, l := range limits {
		j := slices.IndexFunc(old, func(q node.Quota) bool { return q.Name == l.Name })
		if j < 0 {
			qs[i] = node.Quota{Name: l.Name, Bucket: bucket.New(l, now), Born: born}
			continue
		}
		qs[i] = old[j]
		qs[i].Bucket.Resize(now, l)
	}
	return qs
}

// setQuotas gives n the budgets qs; none makes no Extra.
func setQuotas[T any, ID comparable](n *node.Node[T, ID], qs []node.Quota) {
	if qs != nil || n.Budgeted() {
		n.Extra().Quotas = qs
	}
}

// fits reports whether every budget of n covers cost at now, and, when
// not, whether one of them never will (the cost is above its Max).
// Requires n's shard lock.
func fits[T any, ID comparable](n *node.Node[T, ID], cost config.Cost, now int64) (ok, never bool) {
	ok = true
	for i, qs := 0, n.Quotas(); i < len(qs); i++ {
		b, c := &qs[i].Bucket, cost.Of(qs[i].Name)
		if c > b.Max() {
			return false, true
		}
		if !b.Covers(now, c) {
			ok = false
		}
	}
	return ok, false
}

// coverWait is how long after now every budget of n covers cost, if
// nothing else changes, or false if one never will.
func coverWait[T any, ID comparable](n *node.Node[T, ID], cost config.Cost, now int64) (time.Duration, bool) {
	var wait time.Duration
	for i, qs := 0, n.Quotas(); i < len(qs); i++ {
		w, ok := qs[i].Bucket.Wait(now, cost.Of(qs[i].Name))
		if !ok {
			return 0, false
		}
		wait = max(wait, w)
	}
	return wait, true
}

// meter takes what a hold on n costs: a rate-limit token, and cost from
// its budgets, which must cover it (fits); and starts the rest that
// leaves n in, if any. A hold undone by a panic gets it all back from
// its undo (see undo). Requires sh.mu.
func meter[T any, ID comparable](sh *shard[T, ID], n *node.Node[T, ID], cost config.Cost) {
	now := sh.now()
	var next int64
	if n.Limited() {
		next = n.Extra().Bucket.Spend(now)
	}
	if n.Budgeted() {
		for i, qs := 0, n.Quotas(); i < len(qs); i++ {
			qs[i].Bucket.Take(now, cost.Of(qs[i].Name))
		}
		next = max(next, budgetRest(n, now))
		n.SetFullAt(fullAt(n, now))
	}
	if next > n.RestUntil {
		sh.setRest(n, next, node.RateLimited)
	}
}

// budgetRest is until when n must rest for its budgets: until each holds
// at least one unit (and so is out of debt), or 0 if each does now. A
// resource in the heap therefore covers the default cost, 1 of each
// limit, so a call without a cost never has to search.
func budgetRest[T any, ID comparable](n *node.Node[T, ID], now int64) int64 {
	var until int64
	for i, qs := 0, n.Quotas(); i < len(qs); i++ {
		if w, _ := qs[i].Bucket.Wait(now, 1); w > 0 {
			until = max(until, node.After(now, w))
		}
	}
	return until
}

// fullAt is when n's tightest budget is full again (see node.FullAt),
// as of now; 0 without budgets.
func fullAt[T any, ID comparable](n *node.Node[T, ID], now int64) int64 {
	var at int64
	for i, qs := 0, n.Quotas(); i < len(qs); i++ {
		b := &qs[i].Bucket
		w, _ := b.Wait(now, b.Max())
		at = max(at, node.After(now, w))
	}
	return at
}

// limitRest is until when n must rest for its rate limit and budgets, as
// of now, or 0.
func limitRest[T any, ID comparable](n *node.Node[T, ID], now int64) int64 {
	var next int64
	if n.Limited() {
		next = n.Extra().Bucket.Empty(now)
	}
	if n.Budgeted() {
		next = max(next, budgetRest(n, now))
	}
	return next
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

// limitsOfNode is what n's budgets were made from, for profiles.
func limitsOfNode[T any, ID comparable](n *node.Node[T, ID]) []config.Limit {
	qs := n.Quotas()
	if len(qs) == 0 {
		return nil
	}
	ls := make([]config.Limit, len(qs))
	for i, q := range qs {
		ls[i] = config.Limit{Name: q.Name, Max: q.Bucket.Max(), Per: q.Bucket.Per()}
	}
	return ls
}
