package scheduler_test

// A sequential model of budgets (config.Config.Limits): random sequences
// of Add, Update (limits changed while leased), Remove, Lease with a cost,
// Settle, Observe, Release, Cooldown, Fail and lease expiry (the clock
// moving past LeaseTTL), each checked against the model: which resources
// a Lease may return, every error, each resource's state, and each
// bucket's level to the unit. The model uses internal/bucket for the
// arithmetic of one bucket (checked against math/big in its own tests);
// what it checks here is everything around it: which bucket a call pays
// into, when, and what rests because of it. No bucket is ever overdrawn
// by an estimate: the model takes a cost only from buckets that cover
// it, and the scheduler's levels must equal the model's. Half the leases
// name a tenant with a tokens budget of its own (config.Config.Tenants),
// which the model keeps too: a lease is granted only if both the
// resource's and the tenant's buckets cover its cost.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/budget"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/scheduler"
)

type bRes struct {
	id       string
	prio     int
	cap      int
	rpm, tpm int64
}

func bLimits(r *bRes) []config.Limit {
	var ls []config.Limit
	if r.rpm > 0 {
		ls = append(ls, config.Limit{Name: "requests", Max: r.rpm, Per: time.Minute})
	}
	if r.tpm > 0 {
		ls = append(ls, config.Limit{Name: "tokens", Max: r.tpm, Per: 30 * time.Second})
	}
	return ls
}

type bQuota struct {
	name string
	b    budget.Bucket
	born uint64
}

type bKey struct {
	status   genStatus
	res      bRes
	quotas   []bQuota
	issued   uint64
	leases   int
	coolTill int64
}

type bLease struct {
	l        scheduler.Lease[*bRes, string]
	key      int
	token    uint64
	cost     config.Cost
	deadline int64
	ended    string // "", "released", "expired"
	team     bool   // leased for bTeam
}

type bModel struct {
	now       int64
	exclusive bool
	keys      [4]bKey
	leases    []*bLease
	team      *budget.Bucket // bTeam's tokens, from its first lease
}

// bTeam is the tenant of half the model's leases: a tokens budget of its
// own.
var bTeam = config.Tenant{Limits: []config.Limit{{Name: "tokens", Max: 500, Per: 10 * time.Second}}}

const bTTL = 20 * time.Second

func (m *bModel) limitsOf(k int) []config.Limit { return bLimits(&m.keys[k].res) }

func (m *bModel) resting(k int) bool {
	e := &m.keys[k]
	if m.now < e.coolTill {
		return true
	}
	for i := range e.quotas {
		if e.quotas[i].b.Level(m.now) < 1 {
			return true
		}
	}
	return false
}

func (m *bModel) state(k int) string {
	e := &m.keys[k]
	switch {
	case e.status == gAbsent:
		return "absent"
	case e.status == gDraining:
		return "draining"
	case m.resting(k):
		return "resting"
	case m.exclusive && e.leases >= max(e.res.cap, 1):
		return "held"
	}
	return "active"
}

func (m *bModel) fits(k int, c config.Cost) bool {
	e := &m.keys[k]
	for i := range e.quotas {
		q := &e.quotas[i]
		if n := c.Of(q.name); n > q.b.Max() || !q.b.Covers(m.now, n) {
			return false
		}
	}
	return true
}

func (m *bModel) exceeds(c config.Cost) bool {
	live := 0
	for k := range m.keys {
		if m.keys[k].status != gLive {
			continue
		}
		live++
		fitsAll := true
		for _, l := range m.limitsOf(k) {
			if c.Of(l.Name) > l.Max {
				fitsAll = false
			}
		}
		if fitsAll {
			return false
		}
	}
	return live > 0
}

func (m *bModel) retune(k int) {
	e := &m.keys[k]
	var qs []bQuota
	for _, l := range m.limitsOf(k) {
		j := slices.IndexFunc(e.quotas, func(q bQuota) bool { return q.name == l.Name })
		if j < 0 {
			qs = append(qs, bQuota{l.Name, budget.NewBucket(l, m.now), e.issued})
			continue
		}
		q := e.quotas[j]
		q.b.Resize(m.now, l)
		qs = append(qs, q)
	}
	e.quotas = qs
}

func (m *bModel) unhold(lease *bLease, how string, cool time.Duration) {
	e := &m.keys[lease.key]
	lease.ended = how
	e.leases--
	if e.status == gDraining {
		if e.leases == 0 {
			*e = bKey{}
		}
		return
	}
	if cool > 0 {
		e.coolTill = max(e.coolTill, m.now+int64(cool))
	}
}

var bCosts = []config.Cost{nil, {"tokens": 0}, {"tokens": 1}, {"tokens": 7}, {"tokens": 60}, {"tokens": 250},
	{"tokens": 900}, {"requests": 2, "tokens": 30}, {"requests": 0}}

var bAdvances = []time.Duration{time.Millisecond, 700 * time.Millisecond, 3 * time.Second, 11 * time.Second, 25 * time.Second, 2 * time.Minute}

func TestBudgetModel(t *testing.T) {
	seeds := 120
	if testing.Short() {
		seeds = 20
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runBudgetModel(t, uint64(seed)) })
	}
}

func runBudgetModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 29))
	clock := fakeclock.New()
	m := &bModel{exclusive: rng.IntN(2) == 0}
	policy := config.Shared
	if m.exclusive {
		policy = config.Exclusive
	}
	cfg := config.Config[*bRes, string]{
		HeapCount:     1 + rng.IntN(2),
		Ordering:      config.GlobalOrder,
		Comparator:    func(a, b *bRes) int { return cmp.Compare(a.prio, b.prio) },
		KeyFunc:       func(r *bRes) string { return r.id },
		AcquirePolicy: policy,
		Capacity:      func(r *bRes) int { return r.cap },
		Clock:         clock,
		LeaseTTL:      bTTL,
		Limits:        bLimits,
		Tenants: func(name string) config.Tenant {
			if name == "team" {
				return bTeam
			}
			return config.Tenant{}
		},
	}
	s, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	var trace []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d after\n  %v\n%s", seed, trace, fmt.Sprintf(format, args...))
	}
	newRes := func(k int) *bRes {
		return &bRes{id: genKey(k), prio: rng.IntN(3), cap: 1 + rng.IntN(2),
			rpm: []int64{0, 3, 20}[rng.IntN(3)], tpm: []int64{0, 100, 1000}[rng.IntN(3)]}
	}
	liveLease := func() *bLease {
		if len(m.leases) == 0 {
			return nil
		}
		return m.leases[rng.IntN(len(m.leases))]
	}
	wantErrIs := func(op string, got error, want error) {
		t.Helper()
		if (want == nil) != (got == nil) || (want != nil && !errors.Is(got, want)) {
			fail("%s: got %v, want %v", op, got, want)
		}
	}
	for range 150 {
		k := rng.IntN(len(m.keys))
		e := &m.keys[k]
		switch op := rng.IntN(12); op {
		case 0: // Add
			r := newRes(k)
			trace = append(trace, fmt.Sprintf("Add(%s p%d c%d r%d t%d)", r.id, r.prio, r.cap, r.rpm, r.tpm))
			err := s.Add(r)
			if e.status != gAbsent {
				if err == nil {
					fail("Add of a present key succeeded")
				}
				break
			}
			wantErrIs("Add", err, nil)
			*e = bKey{status: gLive, res: *r}
			m.retune(k)
		case 1: // Update, while leased or not
			if e.status != gLive {
				break
			}
			r := newRes(k)
			trace = append(trace, fmt.Sprintf("Update(%s p%d c%d r%d t%d)", r.id, r.prio, r.cap, r.rpm, r.tpm))
			wantErrIs("Update", s.Update(r), nil)
			e.res = *r
			m.retune(k)
		case 2: // Remove
			if e.status != gLive {
				break
			}
			trace = append(trace, "Remove("+genKey(k)+")")
			wantErrIs("Remove", s.Remove(genKey(k)), nil)
			if e.leases > 0 {
				e.status = gDraining
			} else {
				*e = bKey{}
			}
		case 3, 4, 5: // Lease with a cost
			c := bCosts[rng.IntN(len(bCosts))]
			team := rng.IntN(2) == 0
			trace = append(trace, fmt.Sprintf("Lease(%v, team %v)", c, team))
			// The model ignores the names no key has (see
			// cost_names_test.go for their refusal).
			opts := []scheduler.LeaseOption{scheduler.AllowUnknownLimits(), scheduler.WithPriority(rng.IntN(3))}
			if c != nil {
				opts = append(opts, scheduler.WithCost(c))
			}
			if team {
				opts = append(opts, scheduler.WithTenant("team"))
				if m.team == nil {
					b := budget.NewBucket(bTeam.Limits[0], m.now)
					m.team = &b
				}
				if c.Of("tokens") > m.team.Max() {
					_, err := s.Lease(cancelled, opts...)
					wantErrIs("Lease above the tenant's Max", err, crserrors.ErrCostExceedsLimits)
					break
				}
			}
			l, err := s.Lease(cancelled, opts...)
			var cands []int
			best := 1 << 30
			for j := range m.keys {
				if team && !m.team.Covers(m.now, c.Of("tokens")) {
					break
				}
				if m.state(j) == "active" && m.fits(j, c) {
					cands = append(cands, j)
					best = min(best, m.keys[j].res.prio)
				}
			}
			if len(cands) == 0 {
				want := context.Canceled
				if c != nil && m.exceeds(c) {
					want = crserrors.ErrCostExceedsLimits
				}
				wantErrIs("Lease", err, want)
				break
			}
			if err != nil {
				fail("Lease: %v, want one of %v", err, cands)
			}
			j := genIndex(l.Key())
			if !slices.Contains(cands, j) || m.keys[j].res.prio != best {
				fail("Lease got %s (p%d), want one of %v with p%d", l.Key(), m.keys[j].res.prio, cands, best)
			}
			ke := &m.keys[j]
			for i := range ke.quotas {
				ke.quotas[i].b.Take(m.now, c.Of(ke.quotas[i].name))
			}
			if team {
				m.team.Take(m.now, c.Of("tokens"))
			}
			ke.issued++
			ke.leases++
			m.leases = append(m.leases, &bLease{l: l, key: j, token: ke.issued, cost: c, deadline: m.now + int64(bTTL), team: team})
		case 6: // Settle
			lease := liveLease()
			if lease == nil {
				break
			}
			actual := config.Cost{"tokens": []int64{0, 3, 40, 400, 3000}[rng.IntN(5)]}
			if rng.IntN(3) == 0 {
				actual["requests"] = int64(rng.IntN(3))
			}
			trace = append(trace, fmt.Sprintf("Settle(%s#%d, %v)", genKey(lease.key), lease.token, actual))
			err := lease.l.Settle(actual)
			switch lease.ended {
			case "released":
				wantErrIs("Settle", err, crserrors.ErrLeaseReleased)
				continue
			case "expired":
				wantErrIs("Settle", err, crserrors.ErrLeaseExpired)
				continue
			}
			wantErrIs("Settle", err, nil)
			ke := &m.keys[lease.key]
			for i := range ke.quotas {
				q := &ke.quotas[i]
				if a, ok := actual[q.name]; ok && q.born < lease.token {
					q.b.Settle(m.now, lease.cost.Of(q.name), a)
				}
			}
			if a, ok := actual["tokens"]; ok && lease.team {
				m.team.Settle(m.now, lease.cost.Of("tokens"), a)
			}
			merged := config.Cost{}
			for n, v := range lease.cost {
				merged[n] = v
			}
			for n, v := range actual {
				merged[n] = v
			}
			lease.cost = merged
		case 7: // Observe
			lease := liveLease()
			if lease == nil {
				break
			}
			remaining := int64(rng.IntN(1200))
			reset := []time.Duration{0, time.Second, 20 * time.Second, time.Minute, 6 * time.Minute}[rng.IntN(5)]
			trace = append(trace, fmt.Sprintf("Observe(%s#%d, %d, %v)", genKey(lease.key), lease.token, remaining, reset))
			err := lease.l.Observe("tokens", remaining, reset)
			switch lease.ended {
			case "released":
				wantErrIs("Observe", err, crserrors.ErrLeaseReleased)
				continue
			case "expired":
				wantErrIs("Observe", err, crserrors.ErrLeaseExpired)
				continue
			}
			ke := &m.keys[lease.key]
			i := slices.IndexFunc(ke.quotas, func(q bQuota) bool { return q.name == "tokens" })
			if i < 0 {
				wantErrIs("Observe", err, crserrors.ErrUnknownLimit)
				break
			}
			wantErrIs("Observe", err, nil)
			if reset > ke.quotas[i].b.Per() { // another window than the bucket's
				reset = 0
			}
			ke.quotas[i].b.Clamp(m.now, remaining, reset)
		case 8, 9: // Release, Cooldown or Fail
			lease := liveLease()
			if lease == nil {
				break
			}
			how := rng.IntN(3)
			cool := []time.Duration{time.Second, 15 * time.Second}[rng.IntN(2)]
			trace = append(trace, fmt.Sprintf("end#%d(%s#%d, %v)", how, genKey(lease.key), lease.token, cool))
			var err error
			switch how {
			case 0:
				err = lease.l.Release()
			case 1:
				err = lease.l.Cooldown(cool)
			case 2:
				err = lease.l.Fail()
			}
			switch lease.ended {
			case "released":
				wantErrIs("end", err, crserrors.ErrLeaseReleased)
				continue
			case "expired":
				wantErrIs("end", err, crserrors.ErrLeaseExpired)
				continue
			}
			wantErrIs("end", err, nil)
			if how != 1 {
				cool = 0
			}
			m.unhold(lease, "released", cool)
		default: // Advance, which expires leases
			d := bAdvances[rng.IntN(len(bAdvances))]
			trace = append(trace, fmt.Sprintf("Advance(%v)", d))
			clock.Advance(d)
			m.now += int64(d)
			for _, lease := range m.leases {
				if lease.ended == "" && lease.deadline <= m.now {
					m.unhold(lease, "expired", 0)
				}
			}
		}
		m.leases = slices.DeleteFunc(m.leases, func(l *bLease) bool { return l.ended != "" && rng.IntN(4) == 0 })
		for j := range m.keys {
			if got, want := s.StateOf(genKey(j)), m.state(j); got != want {
				fail("%s is %s, model says %s", genKey(j), got, want)
			}
			if m.keys[j].status != gLive {
				continue
			}
			got, err := s.Remaining(genKey(j))
			if err != nil {
				fail("Remaining(%s): %v", genKey(j), err)
			}
			if len(got) != len(m.keys[j].quotas) {
				fail("Remaining(%s) = %v, model has %d buckets", genKey(j), got, len(m.keys[j].quotas))
			}
			for _, q := range m.keys[j].quotas {
				if want := q.b.Level(m.now); got[q.name] != want {
					fail("Remaining(%s)[%s] = %d, model says %d (all: %v)", genKey(j), q.name, got[q.name], want, got)
				}
			}
		}
		if err := s.CheckInvariants(); err != nil {
			fail("invariants: %v", err)
		}
	}
}
