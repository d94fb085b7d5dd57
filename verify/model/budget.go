package model

import (
	"fmt"
	"strings"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/budget"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/scheduler"
)

// The budget model: resources with token buckets (config.Config.Limits),
// under concurrent Lease with a cost, Settle, Release, Cooldown, Update
// with changed limits, Remove, Add, Remaining and steps of the clock. It
// is a model of its own, beside the pool's, so that the pool's histories
// stay as they are and this one stays small.
//
// The property it holds the scheduler to: a lease is granted only by a
// resource whose every bucket covers its cost, and every bucket's level,
// as Remaining reports it, is the model's to the unit, refilled by the
// clock, taken at the grant, corrected by the settlement. So no bucket is
// ever overdrawn by an estimate. A lease may fail (its context has
// already ended) whenever it finds nothing at once, which under budgets'
// strict FIFO order also happens while another caller waits for a
// moment: the model checks grants and levels, not that a lease finds what
// is free. The arithmetic of one bucket is internal/bucket's, checked
// against math/big in its own tests.

// BudgetKeys is the key space of the budget histories.
const BudgetKeys = 3

// BudgetLeases bounds the leases a client holds at once; a lease's id is
// client*BudgetLeases + slot.
const BudgetLeases = 2

// BudgetClients bounds the clients of a budget history.
const BudgetClients = 6

// limitSets are the limits a resource may have, picked by BRes.Set:
// requests and tokens, tokens alone on another window, both larger, and
// none. Every cost a history asks for fits every Max, so that a lease
// never fails for a cost no resource can cover.
var limitSets = [...][]config.Limit{
	{{Name: "requests", Max: 3, Per: time.Second}, {Name: "tokens", Max: 100, Per: time.Second}},
	{{Name: "tokens", Max: 60, Per: 2 * time.Second}},
	{{Name: "requests", Max: 5, Per: time.Second}, {Name: "tokens", Max: 200, Per: time.Second}},
	nil,
}

// limitNames are the names of limitSets, in the order of BKey.Q.
var limitNames = [2]string{"requests", "tokens"}

// tenantNames are the tenants of the budget histories, by
// BInput.Tenant: the default one, and two with limits of their own,
// which a lease spends from with its resource's (tenantLimits). Every
// cost a history asks for fits their Max too.
var tenantNames = [...]string{"", "a", "b"}

var tenantLimits = [len(tenantNames)][]config.Limit{
	nil,
	{{Name: "tokens", Max: 120, Per: time.Second}},
	{{Name: "requests", Max: 2, Per: time.Second}, {Name: "tokens", Max: 100, Per: 2 * time.Second}},
}

func tenantIndex(name string) int {
	for i, n := range tenantNames {
		if n == name {
			return i
		}
	}
	return 0
}

// BRes is the resource of the budget histories.
type BRes struct {
	Key string
	Set int // index into limitSets
	Cap int
}

// BudgetPool is the scheduler of the budget histories, on the checks'
// clock.
type BudgetPool struct {
	*scheduler.Scheduler[*BRes, string]
	clock *fakeclock.Clock
}

// NewBudgetPool starts a scheduler of BudgetKeys at most, over heaps
// shards, under the Exclusive policy if exclusive.
func NewBudgetPool(heaps int, exclusive bool) (BudgetPool, error) {
	clock := fakeclock.New()
	cfg := config.Config[*BRes, string]{
		HeapCount:  heaps,
		Comparator: func(a, b *BRes) int { return strings.Compare(a.Key, b.Key) },
		KeyFunc:    func(r *BRes) string { return r.Key },
		Capacity:   func(r *BRes) int { return r.Cap },
		Limits:     func(r *BRes) []config.Limit { return limitSets[r.Set] },
		Tenants:    func(name string) config.Tenant { return config.Tenant{Limits: tenantLimits[tenantIndex(name)]} },
		Clock:      clock,
	}
	if exclusive {
		cfg.AcquirePolicy = config.Exclusive
	}
	s, err := scheduler.New(cfg)
	return BudgetPool{s, clock}, err
}

// Advance moves the clock by d in one step, calls stepped at the step,
// and fires the timers that came due (fakeclock.Clock.Step).
func (p BudgetPool) Advance(d time.Duration, stepped func()) { p.clock.Step(d, stepped) }

// BKind is an operation of the budget histories.
type BKind uint8

const (
	BAdd BKind = iota
	BUpdate
	BRemove
	BLease
	BSettle
	BRelease
	BCooldown
	BRemaining
	BStep
)

var bKindNames = [...]string{"Add", "Update", "Remove", "Lease", "Settle", "Release", "Cooldown", "Remaining", "Step"}

func (k BKind) String() string { return bKindNames[k] }

// BInput is one call: Key, Set and Cap for Add and Update, Key for Remove
// and Remaining; Lease the lease's id for the lease calls, and Cost the
// tokens a Lease estimates or a Settle reports; Tenant (by tenantNames)
// and Prio a Lease's; Dur the Cooldown's rest or the Step's.
type BInput struct {
	Kind         BKind
	Key          int
	Set, Cap     int
	Lease        int
	Cost         int64
	Tenant, Prio int
	Dur          time.Duration
}

// BOutput is what a call returned: Key, the key a Lease was granted
// (-1 for none); Levels and Has, what Remaining reported, by limitNames.
type BOutput struct {
	Err    Err
	Key    int
	Levels [2]int64
	Has    [2]bool
	Detail string
}

// BQuota is one bucket of a key: whether the key has that limit, the
// bucket, and Born, the key's Issued when the bucket was made (a lease
// with a token up to it did not pay into it: Settle leaves it alone).
type BQuota struct {
	On   bool
	B    budget.Bucket
	Born uint32
}

// BKey is the model of one key.
type BKey struct {
	Status   Status
	Set, Cap int8
	Q        [2]BQuota
	Issued   uint32 // the last lease token
	Holders  int8
	CoolTill int64 // the end of a cooldown; 0 for none
}

// BLeaseState is one open lease: its key, its token, its tenant and what
// it paid, by limitNames.
type BLeaseState struct {
	Open   bool
	Key    int8
	Tenant int8
	Token  uint32
	Paid   [2]int64
}

// BTenant is the model of a tenant's own buckets, by limitNames, made
// full the first time a lease names it (Seen): as full then as at any
// moment before, since nothing spends from them until then.
type BTenant struct {
	Seen bool
	Q    [2]BQuota
}

// BState is the whole model: comparable, so porcupine can compare and
// cache it.
type BState struct {
	Now     int64
	Keys    [BudgetKeys]BKey
	Tenants [len(tenantNames)]BTenant
	Leases  [BudgetClients * BudgetLeases]BLeaseState
}

// tenant returns tenant t's buckets, made full at s.Now if t was never
// seen before.
func (s *BState) tenant(t int) *BTenant {
	tn := &s.Tenants[t]
	if !tn.Seen {
		tn.Seen = true
		for _, l := range tenantLimits[t] {
			tn.Q[limitIndex(l.Name)] = BQuota{On: true, B: budget.NewBucket(l, s.Now)}
		}
	}
	return tn
}

// tenantCovers reports whether tn's buckets cover a lease of tokens now.
func tenantCovers(tn *BTenant, now, tokens int64) bool {
	for i := range tn.Q {
		if q := &tn.Q[i]; q.On && !q.B.Covers(now, costOf(i, tokens)) {
			return false
		}
	}
	return true
}

// BudgetSpec is the model for a scheduler of NewBudgetPool. A lease may
// get any key that covers its cost, even with one shard: a rest (for the
// limits or a cooldown) ends when the scheduler's timer runs, which may
// be late, so a better key may still rest when the model's clock says it
// could serve. Which key a cost goes to is checked sequentially, with an
// exact clock, by the scheduler's budget model test.
type BudgetSpec struct {
	Exclusive bool
}

// costOf is what a lease of tokens estimate pays into the bucket named
// limitNames[i]: a limit the cost does not name costs 1.
func costOf(i int, tokens int64) int64 {
	if limitNames[i] == "tokens" {
		return tokens
	}
	return 1
}

// covers reports whether k can be granted a lease of tokens now.
func (sp BudgetSpec) covers(s *BState, k int, tokens int64) bool {
	e := &s.Keys[k]
	if e.Status != Live || s.Now < e.CoolTill || sp.Exclusive && int(e.Holders) >= max(int(e.Cap), 1) {
		return false
	}
	for i := range e.Q {
		q := &e.Q[i]
		if q.On && (q.B.Level(s.Now) < 1 || !q.B.Covers(s.Now, costOf(i, tokens))) {
			return false
		}
	}
	return true
}

func newKey(set, capacity int, now int64) BKey {
	e := BKey{Status: Live, Set: int8(set), Cap: int8(capacity)}
	for _, l := range limitSets[set] {
		i := limitIndex(l.Name)
		e.Q[i] = BQuota{On: true, B: budget.NewBucket(l, now)}
	}
	return e
}

func limitIndex(name string) int {
	if name == limitNames[0] {
		return 0
	}
	return 1
}

// onLive is the first check of a call by key: on a key that is not live
// only ErrResourceNotFound is allowed, on a live one only success. It
// reports whether the call goes on, and if not whether out is allowed.
func onLive(e *BKey, out BOutput) (ok, allowed bool) {
	if e.Status != Live {
		return false, out.Err == ErrNotFound
	}
	return out.Err == OK, false
}

// Step applies in with result out to s, reporting whether the model
// allows that result.
func (sp BudgetSpec) Step(s BState, in BInput, out BOutput) (bool, BState) {
	if out.Err == ErrOther || out.Err == ErrPanic {
		return false, s
	}
	switch in.Kind {
	case BStep:
		s.Now = min(after(s.Now, in.Dur), Never-1)
		return true, s
	case BAdd:
		e := &s.Keys[in.Key]
		switch e.Status {
		case Live:
			return out.Err == ErrDuplicate, s
		case Draining:
			return out.Err == ErrDuplicateDraining, s
		}
		if out.Err != OK {
			return false, s
		}
		*e = newKey(in.Set, in.Cap, s.Now)
		return true, s
	case BUpdate:
		e := &s.Keys[in.Key]
		if ok, allowed := onLive(e, out); !ok {
			return allowed, s
		}
		var q [2]BQuota
		for _, l := range limitSets[in.Set] {
			i := limitIndex(l.Name)
			if e.Q[i].On {
				q[i] = e.Q[i]
				q[i].B.Resize(s.Now, l)
			} else {
				q[i] = BQuota{On: true, B: budget.NewBucket(l, s.Now), Born: e.Issued}
			}
		}
		e.Q, e.Set, e.Cap = q, int8(in.Set), int8(in.Cap)
		return true, s
	case BRemove:
		e := &s.Keys[in.Key]
		if ok, allowed := onLive(e, out); !ok {
			return allowed, s
		}
		if e.Holders > 0 {
			e.Status = Draining
		} else {
			*e = BKey{}
		}
		return true, s
	case BRemaining:
		e := &s.Keys[in.Key]
		if ok, allowed := onLive(e, out); !ok {
			return allowed, s
		}
		for i := range e.Q {
			if out.Has[i] != e.Q[i].On || e.Q[i].On && out.Levels[i] != e.Q[i].B.Level(s.Now) {
				return false, s
			}
		}
		return true, s
	case BLease:
		if out.Err != OK {
			return out.Err == ErrCanceled || out.Err == ErrNoResource, s
		}
		k := out.Key
		tn := s.tenant(in.Tenant)
		if k < 0 || k >= BudgetKeys || !sp.covers(&s, k, in.Cost) || !tenantCovers(tn, s.Now, in.Cost) {
			return false, s
		}
		e := &s.Keys[k]
		e.Holders++
		e.Issued++
		l := BLeaseState{Open: true, Key: int8(k), Tenant: int8(in.Tenant), Token: e.Issued}
		for i := range e.Q {
			l.Paid[i] = costOf(i, in.Cost)
			if e.Q[i].On {
				e.Q[i].B.Take(s.Now, l.Paid[i])
			}
			if tn.Q[i].On {
				tn.Q[i].B.Take(s.Now, l.Paid[i])
			}
		}
		s.Leases[in.Lease] = l
		return true, s
	case BSettle:
		l := &s.Leases[in.Lease]
		if !l.Open {
			return out.Err == ErrLeaseReleased, s
		}
		if out.Err != OK {
			return false, s
		}
		e := &s.Keys[l.Key]
		if q := &e.Q[1]; q.On && q.Born < l.Token {
			q.B.Settle(s.Now, l.Paid[1], in.Cost)
		}
		if q := &s.Tenants[l.Tenant].Q[1]; q.On {
			q.B.Settle(s.Now, l.Paid[1], in.Cost)
		}
		l.Paid[1] = in.Cost
		return true, s
	case BRelease, BCooldown:
		l := &s.Leases[in.Lease]
		if !l.Open {
			return out.Err == ErrLeaseReleased, s
		}
		if out.Err != OK {
			return false, s
		}
		e := &s.Keys[l.Key]
		e.Holders--
		switch {
		case e.Status == Draining && e.Holders == 0:
			*e = BKey{}
		case e.Status == Live && in.Kind == BCooldown:
			e.CoolTill = max(e.CoolTill, after(s.Now, in.Dur))
		}
		*l = BLeaseState{}
		return true, s
	}
	return false, s
}

// Hash is a hash of s that equal states share.
func (BudgetSpec) Hash(s BState) uint64 {
	var h uint64 = 14695981039346656037
	mix := func(v uint64) {
		h ^= v
		h *= 1099511628211
	}
	mix(uint64(s.Now))
	for _, e := range s.Keys {
		mix(uint64(e.Status) | uint64(uint8(e.Set))<<8 | uint64(uint8(e.Cap))<<16 | uint64(uint8(e.Holders))<<24 | uint64(e.Issued)<<32)
		mix(uint64(e.CoolTill))
		for _, q := range e.Q {
			if q.On {
				mix(uint64(q.B.Level(s.Now)) ^ uint64(q.Born)<<48)
			}
		}
	}
	for _, tn := range s.Tenants {
		for _, q := range tn.Q {
			if q.On {
				mix(uint64(q.B.Level(s.Now)))
			}
		}
	}
	for _, l := range s.Leases {
		if l.Open {
			mix(uint64(l.Key) | uint64(l.Tenant)<<8 | uint64(l.Token)<<16)
			mix(uint64(l.Paid[1]))
		}
	}
	return h
}

// DescribeState lists each key's budgets, holders and cooldown.
func (BudgetSpec) DescribeState(s BState) string {
	var b strings.Builder
	fmt.Fprintf(&b, "now=%d", s.Now)
	for k, e := range s.Keys {
		if e.Status == Absent {
			continue
		}
		fmt.Fprintf(&b, " k%d{status=%d set=%d cap=%d holders=%d issued=%d cool=%d", k, e.Status, e.Set, e.Cap, e.Holders, e.Issued, e.CoolTill)
		for i, q := range e.Q {
			if q.On {
				fmt.Fprintf(&b, " %s=%d(born %d)", limitNames[i], q.B.Level(s.Now), q.Born)
			}
		}
		b.WriteString("}")
	}
	for t, tn := range s.Tenants {
		for i, q := range tn.Q {
			if q.On {
				fmt.Fprintf(&b, " tenant %s %s=%d", tenantNames[t], limitNames[i], q.B.Level(s.Now))
			}
		}
	}
	return b.String()
}

// DescribeBudget is one call and its result, for porcupine's
// visualisation.
func DescribeBudget(in BInput, out BOutput) string {
	var args string
	switch in.Kind {
	case BAdd, BUpdate:
		args = fmt.Sprintf("k%d set=%d cap=%d", in.Key, in.Set, in.Cap)
	case BRemove, BRemaining:
		args = fmt.Sprintf("k%d", in.Key)
	case BLease:
		args = fmt.Sprintf("#%d tokens=%d tenant=%q prio=%d", in.Lease, in.Cost, tenantNames[in.Tenant], in.Prio)
	case BSettle:
		args = fmt.Sprintf("#%d tokens=%d", in.Lease, in.Cost)
	case BRelease:
		args = fmt.Sprintf("#%d", in.Lease)
	case BCooldown, BStep:
		args = fmt.Sprintf("%v", in.Dur)
		if in.Kind == BCooldown {
			args = fmt.Sprintf("#%d %v", in.Lease, in.Dur)
		}
	}
	res := out.Err.String()
	switch {
	case out.Err == ErrOther:
		res += ": " + out.Detail
	case out.Err == OK && in.Kind == BLease:
		res = fmt.Sprintf("k%d", out.Key)
	case out.Err == OK && in.Kind == BRemaining:
		res = fmt.Sprintf("%v %v", out.Has, out.Levels)
	}
	return fmt.Sprintf("%s(%s) -> %s", in.Kind, args, res)
}

// BClient issues budget calls for one goroutine, with the leases it
// holds by slot.
type BClient struct {
	P      BudgetPool
	ID     int
	Leases [BudgetLeases]*BudgetLease
}

// BudgetLease is a lease of the budget histories.
type BudgetLease = scheduler.Lease[*BRes, string]

// Do performs in and reports the result.
func (c *BClient) Do(in BInput) (out BOutput) {
	out.Key = -1
	var err error
	defer c.P.clock.Freeze()() // every call reads the clock on one side of a step
	slot := in.Lease - c.ID*BudgetLeases
	switch in.Kind {
	case BAdd:
		err = c.P.Add(&BRes{Key: KeyName(in.Key), Set: in.Set, Cap: in.Cap})
	case BUpdate:
		err = c.P.Update(&BRes{Key: KeyName(in.Key), Set: in.Set, Cap: in.Cap})
	case BRemove:
		err = c.P.Remove(KeyName(in.Key))
	case BRemaining:
		var rem map[string]int64
		rem, err = c.P.Remaining(KeyName(in.Key))
		for i, name := range limitNames {
			out.Levels[i], out.Has[i] = rem[name]
		}
		if len(rem) > 2 {
			err = fmt.Errorf("remaining: %v", rem)
		}
	case BLease:
		var l BudgetLease
		// The model has keys without a tokens limit ignore the name, also
		// when no key present has one.
		opts := []scheduler.LeaseOption{scheduler.WithCost(config.Cost{"tokens": in.Cost}), scheduler.AllowUnknownLimits()}
		if in.Tenant != 0 {
			opts = append(opts, scheduler.WithTenant(tenantNames[in.Tenant]))
		}
		if in.Prio != 0 {
			opts = append(opts, scheduler.WithPriority(in.Prio))
		}
		l, err = c.P.Lease(cancelled, opts...)
		if err == nil {
			out.Key = KeyIndex(l.Key())
			c.Leases[slot] = &l
		}
	case BSettle:
		err = c.Leases[slot].Settle(config.Cost{"tokens": in.Cost})
	case BRelease:
		err = c.Leases[slot].Release()
		c.Leases[slot] = nil
	case BCooldown:
		err = c.Leases[slot].Cooldown(in.Dur)
		c.Leases[slot] = nil
	default:
		panic(fmt.Sprintf("model: BClient.Do has no case for %v", in.Kind))
	}
	out.Err = Classify(err)
	if out.Err == ErrOther {
		out.Detail = err.Error()
	}
	return out
}

// budgetDurations are the steps of the clock and the cooldowns: a
// fraction of a unit's refill, a few units', a whole window's, and more.
var budgetDurations = []time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, time.Second, time.Hour}

// Next draws the client's next call; rng returns a number in [0, n). A
// call on a lease picks one of the client's, and a client without one
// leases.
func (c *BClient) Next(rng func(n int) int) BInput {
	free, held := -1, -1 // a free slot, and a lease, by slot
	for i, l := range c.Leases {
		switch {
		case l == nil && free < 0:
			free = i
		case l != nil && (held < 0 || rng(2) == 0):
			held = i
		}
	}
	key := rng(BudgetKeys)
	switch pick := rng(20); {
	case pick < 2:
		return BInput{Kind: BAdd, Key: key, Set: rng(len(limitSets)), Cap: 1 + rng(2)}
	case pick < 4:
		return BInput{Kind: BUpdate, Key: key, Set: rng(len(limitSets)), Cap: 1 + rng(2)}
	case pick < 5:
		return BInput{Kind: BRemove, Key: key}
	case pick < 7:
		return BInput{Kind: BRemaining, Key: key}
	case pick < 8:
		return BInput{Kind: BStep, Dur: budgetDurations[rng(len(budgetDurations))]}
	case (pick < 13 && free >= 0) || held < 0:
		return BInput{Kind: BLease, Lease: c.ID*BudgetLeases + max(free, 0), Cost: int64(rng(4) * 20),
			Tenant: rng(len(tenantNames)), Prio: 5 * rng(2)}
	case pick < 16:
		return BInput{Kind: BSettle, Lease: c.ID*BudgetLeases + held, Cost: int64(rng(5) * 25)}
	case pick < 19:
		return BInput{Kind: BRelease, Lease: c.ID*BudgetLeases + held}
	default:
		return BInput{Kind: BCooldown, Lease: c.ID*BudgetLeases + held, Dur: budgetDurations[rng(3)]}
	}
}
