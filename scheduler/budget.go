package scheduler

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/bucket"
	"github.com/crsched/crs/internal/node"
)

// LeaseOption configures one call of Lease or LeaseByAffinity.
type LeaseOption interface{ leaseOption() }

type leaseOptions struct {
	cost config.Cost
}

// costOption is a map, so that passing it as a LeaseOption allocates
// nothing.
type costOption config.Cost

func (costOption) leaseOption() {}

// WithCost makes a lease spend cost from the resource's budgets (see
// config.Config.Limits) instead of the default, 1 unit of every limit. The
// cost is an estimate, taken in the same step as the hold; Lease.Settle
// replaces it by what the call really spent. A limit the cost does not
// name costs 1; a name that a resource has no limit for is ignored by that
// resource. A negative amount, or one above config.MaxUnits, makes the
// call fail with ErrInvalidCost.
func WithCost(cost config.Cost) LeaseOption { return costOption(cost) }

func leaseOptionsOf(opts []LeaseOption) (leaseOptions, error) {
	var o leaseOptions
	for _, opt := range opts {
		// A type switch rather than a method that fills o: o passed
		// through an interface would escape, an allocation per Lease.
		if c, ok := opt.(costOption); ok {
			o.cost = config.Cost(c)
		}
	}
	if len(o.cost) == 0 {
		o.cost = nil // the default: nothing to check on an active resource
	} else if err := o.cost.Validate(); err != nil {
		return o, fmt.Errorf("lease: %w", err)
	}
	return o, nil
}

// scanDepth bounds the search for a resource that covers a cost its
// shard's best does not: the first scanDepth entries of the heap's array,
// its top levels, which hold the best resources (and, among equals, those
// with the most budget left). A resource deeper down is not found until
// it rises, and the caller waits meanwhile, unless none of those will
// ever cover the cost: the search then goes on down the heap.
const scanDepth = 64

// wakeToken marks an expiry entry that wakes a shard's waiters at the
// instant its budgets may cover the oldest one's cost (see wake). Lease
// tokens count up from 1 and never reach it.
const wakeToken = math.MaxUint64

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
	old := n.Quotas()
	var born uint64
	if n.Budgeted() || len(limits) > 0 {
		born = n.Extra().Issued
	}
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
// leaves n in, if any. unmeter gives it all back, exactly (a refund after
// the clock moved on leaves the level where it would be without the
// take), for a hold undone by a panic; the caller restores the rest.
// Both require sh.mu.
func meter[T any, ID comparable](sh *shard[T, ID], n *node.Node[T, ID], cost config.Cost) {
	now := sh.now()
	var next int64
	if n.Limited() {
		next = n.Extra().Bucket.Spend(now)
	}
	if n.Budgeted() {
		spend(n, cost, now)
		next = max(next, budgetRest(n, now))
		n.SetFullAt(fullAt(n, now))
	}
	if next > n.RestUntil {
		sh.setRest(n, next, node.RateLimited)
	}
}

func unmeter[T any, ID comparable](sh *shard[T, ID], n *node.Node[T, ID], cost config.Cost) {
	now := sh.now()
	if n.Limited() {
		n.Extra().Bucket.Refund(now)
	}
	if n.Budgeted() {
		refund(n, cost, now)
		n.SetFullAt(fullAt(n, now))
	}
}

// spend takes cost from n's budgets, which must cover it (fits); refund
// gives it back.
func spend[T any, ID comparable](n *node.Node[T, ID], cost config.Cost, now int64) {
	for i, qs := 0, n.Quotas(); i < len(qs); i++ {
		qs[i].Bucket.Take(now, cost.Of(qs[i].Name))
	}
}

func refund[T any, ID comparable](n *node.Node[T, ID], cost config.Cost, now int64) {
	for i, qs := 0, n.Quotas(); i < len(qs); i++ {
		qs[i].Bucket.Settle(now, cost.Of(qs[i].Name), 0)
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

// covering returns the best node among the first scanDepth of sh's heap
// that covers cost, or nil, with the earliest instant at which one of
// those will (node.Never if none ever will). Requires sh.mu; runs the
// comparator.
func (s *Scheduler[T, ID]) covering(sh *shard[T, ID], cost config.Cost, now int64) (*node.Node[T, ID], int64) {
	top := sh.best()
	if top == nil {
		return nil, node.Never
	}
	if cost == nil {
		return top, now // in the heap, a resource covers the default cost
	}
	if ok, _ := fits(top, cost, now); ok {
		return top, now
	}
	var best *node.Node[T, ID]
	soonest := int64(node.Never)
	sh.broken = true
	// Past scanDepth only while nothing seen will ever cover the cost: a
	// waiter would otherwise wait for nothing, ahead of every other.
	for i := 0; i < sh.heap.Len() && (i < scanDepth || (best == nil && soonest == node.Never)); i++ {
		n := sh.heap.At(i)
		if ok, never := fits(n, cost, now); ok {
			if best == nil || sh.heap.Less(n, best) {
				best = n
			}
		} else if !never && best == nil {
			if w, ok := coverWait(n, cost, now); ok {
				soonest = min(soonest, node.After(now, w))
			}
		}
	}
	sh.broken = false
	if best != nil {
		return best, now
	}
	return nil, soonest
}

// wake makes the expiry timer serve sh's waiters at at, when a budget of
// sh may cover the oldest waiter's cost. It keeps one wake per shard
// armed, the earliest. Requires sh.mu.
func (s *Scheduler[T, ID]) wake(sh *shard[T, ID], at int64) {
	if at == node.Never || (sh.wakeAt != 0 && sh.wakeAt <= at) {
		return
	}
	sh.wakeAt = at
	s.expiry.schedule(at, &s.wakers[sh.index], wakeToken)
}

// kick makes the expiry timer serve the waiters of every shard but skip
// now: the oldest waiter changed where no giver serves it (it left, or
// the one before it was served from shard skip, which then armed its own
// wake), and another shard may cover its cost. The caller holds no lock,
// or shard skip's.
func (s *Scheduler[T, ID]) kick(skip int) {
	now := s.now()
	for i := range s.wakers {
		if i != skip {
			s.expiry.schedule(now, &s.wakers[i], wakeToken)
		}
	}
}

// woken serves sh's waiters at a wake (see wake, kick).
func (s *Scheduler[T, ID]) woken(sh *shard[T, ID]) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s.repair(sh, nil)
	if sh.wakeAt <= s.now() {
		sh.wakeAt = 0
	}
	s.serve(sh)
}

// probe is the check of the oldest waiter, just queued: whether some
// shard has a resource that covers its cost now. If none does, it arms
// each shard's wake for the instant its budgets first will, so that the
// caller, committed, is served then without polling.
func (s *Scheduler[T, ID]) probe(cost config.Cost) (covered bool) {
	for i := range s.shards {
		sh := &s.shards[i]
		func() {
			sh.mu.Lock()
			defer sh.mu.Unlock()
			s.repair(sh, nil)
			n, at := s.covering(sh, cost, s.now())
			if n != nil {
				covered = true
				return
			}
			s.wake(sh, at)
		}()
		if covered {
			return true
		}
	}
	return false
}

// limitsHold reports, for a caller just committed to waiting, whether
// limits keep a resource with a free slot from the oldest waiter: one
// rests for them alone (see shard.heldBack) or, with budgets, one is
// active, which strict FIFO order would have handed to the oldest
// waiter were its budgets not short of that waiter's cost. It reads no
// lock, so a change under way may make it miss or count one wait.
func (s *Scheduler[T, ID]) limitsHold() bool {
	for i := range s.shards {
		sh := &s.shards[i]
		if sh.heldBack.Load() > 0 || s.budgeted && sh.active.Load() > 0 {
			return true
		}
	}
	return false
}

// profiles counts the resources by the sizes of their budgets, so that a
// cost that no resource can ever cover is refused at once
// (ErrCostExceedsLimits) rather than waited for: pools have few distinct
// sets of limits, often one per tier of API key. A resource is counted,
// moved and uncounted under its shard's lock, in the step that adds it,
// changes its limits or removes it, so that the counts are those of the
// resources present whenever no shard lock is held: counted later than it
// became visible, a resource removed at once would leave a negative
// count, and every cost would seem to exceed the pool's limits. mu is
// taken after a shard lock, or with none, and takes no other lock.
type profiles struct {
	mu     sync.Mutex
	counts map[string]int // by profileKey; guarded by mu
	limits map[string][]config.Limit
}

func profileKey(limits []config.Limit) string {
	var b strings.Builder
	for _, l := range limits {
		b.WriteString(strconv.Quote(l.Name))
		b.WriteByte('=')
		b.WriteString(strconv.FormatInt(l.Max, 10))
		b.WriteByte(';')
	}
	return b.String()
}

// change adds d resources with limits.
func (p *profiles) change(limits []config.Limit, d int) {
	k := profileKey(limits)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.add(k, limits, d)
}

// add is change with the key k and p.mu held.
func (p *profiles) add(k string, limits []config.Limit, d int) {
	if p.counts == nil {
		p.counts = make(map[string]int)
		p.limits = make(map[string][]config.Limit)
	}
	p.counts[k] += d
	if p.counts[k] == 0 {
		delete(p.counts, k)
		delete(p.limits, k)
	} else if _, ok := p.limits[k]; !ok {
		p.limits[k] = slices.Clone(limits)
	}
}

// move moves a resource from the profile of limits was to that of now in
// one step, so that no exceeds in between sees a pool without it, and
// reports whether the profiles changed.
func (p *profiles) move(was, now []config.Limit) bool {
	kw, kn := profileKey(was), profileKey(now)
	if kw == kn {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.add(kw, was, -1)
	p.add(kn, now, 1)
	return true
}

// exceeds reports whether the pool has resources and cost is above a
// limit's Max on every one of them.
func (p *profiles) exceeds(cost config.Cost) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.counts) == 0 {
		return false
	}
	for k, c := range p.counts {
		if c <= 0 {
			continue
		}
		fitsAll := true
		for _, l := range p.limits[k] {
			if cost.Of(l.Name) > l.Max {
				fitsAll = false
				break
			}
		}
		if fitsAll {
			return false
		}
	}
	return true
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

// Settle replaces the lease's estimate (WithCost, or the default 1 of
// each limit) by what the call actually spent, for the limit names actual
// gives: a call that spent less refunds the difference (up to the
// bucket's Max), one that spent more takes the rest, which may put the
// bucket in debt; the resource then rests until the debt is repaid and a
// unit more has refilled. Names actual does not give keep their estimate.
// Settling again, through this handle or any copy of it, corrects what
// the last settlement recorded. A bucket added by an Update after the
// lease was granted, which the lease did not pay into, is left alone.
//
// It returns ErrInvalidCost for a negative or too large amount, and
// ErrLeaseReleased (or ErrLeaseExpired) once the lease has ended,
// changing nothing: settle before Release.
func (l *Lease[T, ID]) Settle(actual config.Cost) error {
	if err := actual.Validate(); err != nil {
		return fmt.Errorf("settle: %w", err)
	}
	if l.released || l.s == nil {
		return crserrors.ErrLeaseReleased
	}
	if l.s.closed.Load() {
		return crserrors.ErrSchedulerClosed
	}
	return l.s.settle(l, actual)
}

func (s *Scheduler[T, ID]) settle(l *Lease[T, ID], actual config.Cost) error {
	return s.onLease(l, func(n *node.Node[T, ID], e *node.Lease, now int64) error {
		paid := config.Cost(e.Cost)
		for i, qs := 0, n.Quotas(); i < len(qs); i++ {
			a, ok := actual[qs[i].Name]
			if !ok || qs[i].Born >= l.token {
				continue
			}
			qs[i].Bucket.Settle(now, paid.Of(qs[i].Name), a)
		}
		if len(actual) > 0 {
			c := make(config.Cost, len(paid)+len(actual))
			maps.Copy(c, paid)
			maps.Copy(c, actual)
			e.Cost = c
		}
		return nil
	})
}

// Observe lowers the resource's budget called name to what the provider
// reports: remaining units left now, and its own bucket full again after
// reset (for OpenAI, the x-ratelimit-remaining-tokens and
// x-ratelimit-reset-tokens headers). The bucket then never believes it has
// more than the provider says, now or as both refill; it is never raised,
// since a provider that reports more has not yet counted the calls in
// flight. A reset longer than the limit's Per describes another window
// than this bucket's (OpenAI's own sample reports 149,984 of 150,000
// tokens left with a reset of 6m0s on a per-minute limit), so only
// remaining is applied then. A resource left with less than one unit
// rests until it has one. A 429 with a Retry-After is Cooldown's job, not
// Observe's.
//
// It returns ErrInvalidCost for a negative remaining or one above
// config.MaxUnits, ErrInvalidDuration for a negative reset,
// ErrUnknownLimit when the resource has no limit called name, and
// ErrLeaseReleased (or ErrLeaseExpired) once the lease has ended; in each
// case it changes nothing.
func (l *Lease[T, ID]) Observe(name string, remaining int64, reset time.Duration) error {
	switch {
	case remaining < 0 || remaining > config.MaxUnits:
		return fmt.Errorf("observe %q: %w: remaining %d", name, crserrors.ErrInvalidCost, remaining)
	case reset < 0:
		return fmt.Errorf("observe %q: %w: reset %v", name, crserrors.ErrInvalidDuration, reset)
	case l.released || l.s == nil:
		return crserrors.ErrLeaseReleased
	case l.s.closed.Load():
		return crserrors.ErrSchedulerClosed
	}
	return l.s.onLease(l, func(n *node.Node[T, ID], _ *node.Lease, now int64) error {
		qs := n.Quotas()
		i := slices.IndexFunc(qs, func(q node.Quota) bool { return q.Name == name })
		if i < 0 {
			return fmt.Errorf("observe %q: %w", name, crserrors.ErrUnknownLimit)
		}
		if reset > qs[i].Bucket.Per() {
			reset = 0
		}
		qs[i].Bucket.Clamp(now, remaining, reset)
		return nil
	})
}

// onLease runs change on the budgets of l's resource and on its lease
// record e, under the shard's lock, while the lease lasts, then moves the
// resource where its budgets now put it: resting while one holds less than a unit, back in the heap
// once a refund gives every one a unit, and in the heap's order by its
// headroom. It serves waiters a refund may now cover.
func (s *Scheduler[T, ID]) onLease(l *Lease[T, ID], change func(n *node.Node[T, ID], e *node.Lease, now int64) error) error {
	n := l.node
	sh := &s.shards[n.Shard]
	served, err := func() (bool, error) {
		sh.mu.Lock()
		defer sh.mu.Unlock()
		s.repair(sh, nil)
		i := n.FindLease(l.token)
		if i < 0 {
			return false, s.leaseGone(l.deadline)
		}
		now := s.now()
		e := n.Lease(i)
		if e.Deadline != 0 && now >= e.Deadline {
			return false, crserrors.ErrLeaseExpired // the timer is about to reclaim it
		}
		if !n.Budgeted() {
			return false, change(n, e, now) // nothing to move
		}
		saved := slices.Clone(n.Quotas())
		paid := e.Cost
		full := n.FullAt()
		rest, why := n.RestUntil, n.Rest
		if err := change(n, e, now); err != nil {
			return false, err
		}
		done := false
		defer func() {
			if !done {
				copy(n.Quotas(), saved)
				e.Cost = paid
				n.SetFullAt(full)
				sh.setRest(n, rest, why)
			}
		}()
		setLimitRest(sh, n, limitRest(n, now))
		n.SetFullAt(fullAt(n, now))
		sh.place(n)
		done = true
		if n.RestUntil != rest && n.RestUntil != 0 {
			s.expiry.schedule(n.RestUntil, n, 0)
		}
		s.restMoved(n, rest)
		return s.serve(sh), nil
	}()
	yieldTo(served)
	return err
}

// Remaining returns the units left now in each budget of the resource
// with key id, by limit name: negative for a bucket in debt, empty for a
// resource without limits. It returns ErrResourceNotFound for an unknown
// key.
func (s *Scheduler[T, ID]) Remaining(id ID) (map[string]int64, error) {
	if s.closed.Load() {
		return nil, crserrors.ErrSchedulerClosed
	}
	var out map[string]int64
	_, err := s.locked(id, live, func(_ *shard[T, ID], n *node.Node[T, ID]) (bool, error) {
		now := s.now()
		qs := n.Quotas()
		out = make(map[string]int64, len(qs))
		for i := range qs {
			out[qs[i].Name] = qs[i].Bucket.Level(now)
		}
		return false, nil
	})
	return out, err
}

// Budget is one budget of a resource, as Scheduler.Budgets reports it.
type Budget struct {
	Limit     string // the limit's Name
	Max       int64
	Remaining int64 // units left; negative for a bucket in debt
}

// Budgets calls yield with the key and each budget of every resource
// that has limits, as of now, until yield returns false: what Remaining
// reports, for the whole pool at once (an exporter's scrape, say). A
// resource removed while held is left out. Each shard is read under its
// lock, into a copy, and yield runs with no lock held, so it may be slow
// or call the scheduler; a resource added or removed during the call may
// or may not be reported, and resources of different shards are read at
// different instants.
func (s *Scheduler[T, ID]) Budgets(yield func(ID, Budget) bool) {
	if !s.budgeted || s.closed.Load() {
		return
	}
	// The map's lock (if it takes one) comes after a shard's, never
	// before: collect the nodes first, then read each shard's.
	byShard := make([][]*node.Node[T, ID], len(s.shards))
	s.nodes.Range(func(_ ID, n *node.Node[T, ID]) {
		byShard[n.Shard] = append(byShard[n.Shard], n)
	})
	type entry struct {
		key ID
		b   Budget
	}
	var read []entry
	for i, nodes := range byShard {
		read = read[:0]
		func() {
			sh := &s.shards[i]
			sh.mu.Lock()
			defer sh.mu.Unlock()
			now := s.now()
			for _, n := range nodes {
				if gone(n) {
					continue
				}
				for _, q := range n.Quotas() {
					read = append(read, entry{n.Key, Budget{q.Name, q.Bucket.Max(), q.Bucket.Level(now)}})
				}
			}
		}()
		for _, e := range read {
			if !yield(e.key, e.b) {
				return
			}
		}
	}
}
