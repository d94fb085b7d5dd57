package redispool

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

// replicas opens n Pools of one pool on c, each with its own
// subscription, as n processes would; parked receives each time a
// waiter of any of them is about to block.
func replicas(t *testing.T, n int, opts Options) (ps []*Pool, parked chan struct{}) {
	t.Helper()
	parked = make(chan struct{}, 1024)
	for range n {
		p := newPool(t, newClient(t), opts)
		opts.Name = p.name
		p.onParked(func() { parked <- struct{}{} })
		ps = append(ps, p)
	}
	for _, p := range ps {
		startHub(t, p)
	}
	return ps, parked
}

func acquireWith(p *Pool, opts ...AcquireOption) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		l, err := p.Acquire(ctx, opts...)
		ch <- acquired{l, err}
	}()
	return ch
}

type tenantGrant struct {
	tenant string
	lease  *Lease
}

// shareOfGrants runs, on one exclusive resource of three replicas,
// callers[tenant] goroutines per tenant, each acquiring again (at
// cost[tenant] tokens, if given) as soon as it has handed its lease
// over, and returns each tenant's share of the tokens (of the grants,
// without costs) of the first n grants. The test releases each lease
// only once every caller waits, so the order is the pool's alone.
func shareOfGrants(t *testing.T, shareBy string, tenants []Tenant, callers map[string]int, cost map[string]int64, n int) map[string]float64 {
	t.Helper()
	ps, parked := replicas(t, 3, Options{RecheckInterval: time.Hour, LeaseTTL: time.Hour, ShareBy: shareBy})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	add(t, ps[0], Resource{ID: "r", Limits: []config.Limit{{Name: "tokens", Max: MaxLimitMax, Per: time.Hour}}})
	if err := ps[1].SyncTenants(ctx, tenants); err != nil {
		t.Fatalf("SyncTenants: %v", err)
	}
	held := mustAcquire(t, ps[0])
	grants := make(chan tenantGrant)
	waiting, k := 0, 0
	for tenant, m := range callers {
		for range m {
			p := ps[k%len(ps)]
			k++
			opts := []AcquireOption{WithTenant(tenant), WithCost(config.Cost{"tokens": max(cost[tenant], 1)})}
			go func() {
				for {
					l, err := p.Acquire(ctx, opts...)
					if err != nil {
						return
					}
					select {
					case grants <- tenantGrant{tenant, l}:
					case <-ctx.Done():
						_ = l.Release(context.Background())
						return
					}
				}
			}()
		}
		waiting += m
	}
	for range waiting {
		receive(t, parked, "every caller to wait")
	}
	count := map[string]int64{}
	for range n {
		mustRelease(t, held)
		var g tenantGrant
		select {
		case g = <-grants:
		case <-time.After(30 * time.Second):
			t.Fatal("no grant")
		}
		count[g.tenant] += max(cost[g.tenant], 1)
		held = g.lease
		receive(t, parked, "the served caller to wait again")
	}
	cancel()
	mustRelease(t, held)
	var total int64
	for _, c := range count {
		total += c
	}
	shares := map[string]float64{}
	for tenant, c := range count {
		shares[tenant] = float64(c) / float64(total)
	}
	return shares
}

func TestTenantsShareAScarceResourceByWeightAcrossReplicas(t *testing.T) {
	for _, tc := range []struct {
		name    string
		shareBy string
		tenants []Tenant
		cost    map[string]int64
		want    float64 // a's share
		within  float64
	}{
		{"equal weights", "", nil, nil, 0.5, 0.03},
		{"weights 3 to 1", "", []Tenant{{Name: "a", Weight: 3}, {Name: "b", Weight: 1}}, nil, 0.75, 0.03},
		{"shared by tokens, a's calls costing 10 times b's", "tokens", nil, map[string]int64{"a": 10, "b": 1}, 0.5, 0.05},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shares := shareOfGrants(t, tc.shareBy, tc.tenants, map[string]int{"a": 12, "b": 2}, tc.cost, 200)
			t.Logf("shares of 200 grants: %v", shares)
			if math.Abs(shares["a"]-tc.want) > tc.within {
				t.Fatalf("shares %v, want a's within %v of %v", shares, tc.within, tc.want)
			}
		})
	}
}

func TestAHigherPriorityIsServedAheadOfOlderWaiters(t *testing.T) {
	ps, parked := replicas(t, 2, Options{RecheckInterval: time.Hour})
	add(t, ps[0], Resource{ID: "r"})
	held := mustAcquire(t, ps[0])
	batch := acquireWith(ps[0], WithTenant("batch"))
	receive(t, parked, "the batch waiter to block")
	plain := acquireWith(ps[1])
	receive(t, parked, "the plain waiter to block")
	interactive := acquireWith(ps[1], WithTenant("web"), WithPriority(5))
	receive(t, parked, "the interactive waiter to block")
	mustRelease(t, held)
	l := expectOnly(t, interactive, batch, plain)
	mustRelease(t, l)
	l = expectOnly(t, batch, plain) // the default tenant is a tenant too
	mustRelease(t, l)
	l = expectOnly(t, plain)
	checkInvariants(t, newClient(t), ps[0])
	mustRelease(t, l)
}

func TestATenantAtItsLimitDoesNotHoldBackAnotherTenant(t *testing.T) {
	ps, parked := replicas(t, 2, Options{RecheckInterval: time.Hour})
	ctx := context.Background()
	add(t, ps[0], Resource{ID: "r", Capacity: 4})
	limits := []config.Limit{{Name: "requests", Max: 1, Per: time.Hour}}
	if err := ps[0].SyncTenants(ctx, []Tenant{{Name: "a", Limits: limits}}); err != nil {
		t.Fatalf("SyncTenants: %v", err)
	}
	first, err := ps[0].Acquire(ctx, WithTenant("a"))
	if err != nil {
		t.Fatalf("a's first Acquire: %v", err)
	}
	if l, err := ps[1].TryAcquire(ctx, WithTenant("a")); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("a's TryAcquire past its limit: %v, %v; want ErrNoResourceAvailable", l, err)
	}
	blocked := acquireWith(ps[0], WithTenant("a"))
	receive(t, parked, "a's second caller to wait")
	other, err := ps[1].Acquire(ctx, WithTenant("b"))
	if err != nil {
		t.Fatalf("b's Acquire behind a's waiter: %v", err)
	}
	if l, err := ps[1].TryAcquire(ctx); err != nil {
		t.Fatalf("TryAcquire of the default tenant behind a's waiter: %v", err)
	} else {
		mustRelease(t, l)
	}
	select {
	case r := <-blocked:
		t.Fatalf("a served past its limit: %v, %v", r.lease, r.err)
	default:
	}
	if s := stats(t, ps[0]); s.Queued != 1 {
		t.Fatalf("stats %+v, want a's waiter alone", s)
	}
	checkInvariants(t, newClient(t), ps[0])
	checkFair(t, ps[0])
	mustRelease(t, first)
	mustRelease(t, other)
}

func TestACostAboveItsTenantsMaxFailsAtOnce(t *testing.T) {
	p := newPool(t, newClient(t), Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "r", Limits: []config.Limit{{Name: "tokens", Max: 1000, Per: time.Minute}}})
	tenants := []Tenant{{Name: "a", Limits: []config.Limit{{Name: "tokens", Max: 10, Per: time.Minute}}}}
	if err := p.SyncTenants(ctx, tenants); err != nil {
		t.Fatalf("SyncTenants: %v", err)
	}
	cost := WithCost(config.Cost{"tokens": 11})
	if l, err := p.Acquire(ctx, cost, WithTenant("a")); !errors.Is(err, crserrors.ErrCostExceedsLimits) {
		t.Fatalf("Acquire above a's Max: %v, %v; want ErrCostExceedsLimits", l, err)
	}
	l, err := p.Acquire(ctx, cost, WithTenant("b"))
	if err != nil {
		t.Fatalf("the same cost for b: %v", err)
	}
	mustRelease(t, l)
}

func TestAGrantSpendsItsTenantsLimitsWithTheResources(t *testing.T) {
	p := newPool(t, newClient(t), Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "r", Capacity: 8, Limits: []config.Limit{{Name: "tokens", Max: 1000, Per: time.Hour}}})
	tenants := []Tenant{{Name: "a", Limits: []config.Limit{{Name: "tokens", Max: 100, Per: time.Hour}}}}
	if err := p.SyncTenants(ctx, tenants); err != nil {
		t.Fatalf("SyncTenants: %v", err)
	}
	cost := WithCost(config.Cost{"tokens": 60})
	l, err := p.TryAcquire(ctx, cost, WithTenant("a"))
	if err != nil {
		t.Fatalf("a's first call: %v", err)
	}
	if _, err := p.TryAcquire(ctx, cost, WithTenant("a")); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("a's second call, 120 of 100: %v; want ErrNoResourceAvailable", err)
	}
	if err := l.Settle(ctx, config.Cost{"tokens": 20}); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	l2, err := p.TryAcquire(ctx, cost, WithTenant("a"))
	if err != nil {
		t.Fatalf("a's call after a refund of 40: %v", err)
	}
	left, err := p.Remaining(ctx, "r")
	if err != nil || left["tokens"] != 1000-20-60 {
		t.Fatalf("resource's tokens %v, %v; want %d", left, err, 1000-20-60)
	}
	mustRelease(t, l)
	mustRelease(t, l2)
}

func TestSettleCorrectsATenantsShare(t *testing.T) {
	ps, parked := replicas(t, 2, Options{RecheckInterval: time.Hour, ShareBy: "tokens"})
	ctx := context.Background()
	add(t, ps[0], Resource{ID: "r", Limits: []config.Limit{{Name: "tokens", Max: 1 << 40, Per: time.Hour}}})
	big, err := ps[0].Acquire(ctx, WithTenant("a"), WithCost(config.Cost{"tokens": 100}))
	if err != nil {
		t.Fatalf("a's Acquire: %v", err)
	}
	if err := big.Settle(ctx, config.Cost{"tokens": 10}); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	mustRelease(t, big)
	held, err := ps[1].Acquire(ctx, WithTenant("b"), WithCost(config.Cost{"tokens": 50}))
	if err != nil {
		t.Fatalf("b's Acquire: %v", err)
	}
	b := acquireWith(ps[1], WithTenant("b"))
	receive(t, parked, "b's waiter to block")
	a := acquireWith(ps[0], WithTenant("a"))
	receive(t, parked, "a's waiter to block")
	mustRelease(t, held)
	// a spent 10 tokens, b 50: a first, though b waited longer (an
	// estimate of 100 would have put b first).
	l := expectOnly(t, a, b)
	mustRelease(t, l)
	mustRelease(t, expectOnly(t, b))
}

func TestSyncTenantsRefusesBadInputAndChangesNothing(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	good := []Tenant{{Name: "a", Weight: 2}}
	if err := p.SyncTenants(ctx, good); err != nil {
		t.Fatalf("SyncTenants: %v", err)
	}
	before, err := c.ZRange(ctx, p.keys[8], 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]Tenant{
		{{Name: "a"}, {Name: "a"}},
		{{Name: "a", Weight: -1}},
		{{Name: "a", Weight: config.MaxUnits + 1}},
		{{Name: "a", Limits: []config.Limit{{Name: "x", Max: 0, Per: time.Second}}}},
		{{Name: "a", Limits: []config.Limit{{Name: "x", Max: MaxLimitMax + 1, Per: time.Second}}}},
		{{Name: "", Limits: []config.Limit{{Name: "x", Max: 1, Per: time.Second}}}},
	} {
		if err := p.SyncTenants(ctx, bad); !errors.Is(err, crserrors.ErrInvalidTenant) {
			t.Errorf("SyncTenants(%+v): %v, want ErrInvalidTenant", bad, err)
		}
	}
	after, err := c.ZRange(ctx, p.keys[8], 0, -1).Result()
	if err != nil || fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("tenants %v, %v; want %v", after, err, before)
	}
}

func TestAPriorityOutOfRangeIsRefused(t *testing.T) {
	p := newPool(t, newClient(t), Options{})
	if _, err := p.TryAcquire(context.Background(), WithPriority(math.MaxInt32+1)); !errors.Is(err, ErrInvalidPriority) {
		t.Fatalf("TryAcquire: %v, want ErrInvalidPriority", err)
	}
}

func TestAWaiterWhoseCostNothingCoversHoldsBackOnlyItsOwnTenant(t *testing.T) {
	ps, parked := replicas(t, 2, Options{RecheckInterval: time.Hour})
	ctx := context.Background()
	add(t, ps[0], Resource{ID: "r", Capacity: 4, Limits: []config.Limit{{Name: "tokens", Max: 100, Per: time.Hour}}})
	cost := func(n int64) AcquireOption { return WithCost(config.Cost{"tokens": n}) }
	first, err := ps[0].TryAcquire(ctx, WithTenant("a"), cost(90))
	if err != nil {
		t.Fatalf("a's first call: %v", err)
	}
	big := acquireWith(ps[0], WithTenant("a"), cost(50))
	receive(t, parked, "a's large call to wait")
	small := acquireWith(ps[0], WithTenant("a"), cost(5))
	receive(t, parked, "a's small call to wait behind it")
	other, err := ps[1].Acquire(ctx, WithTenant("b"), cost(5))
	if err != nil {
		t.Fatalf("b's call beside a's waiters: %v", err)
	}
	for name, ch := range map[string]<-chan acquired{"large": big, "small": small} {
		select {
		case r := <-ch:
			t.Fatalf("a's %s call served: %v, %v", name, r.lease, r.err)
		default:
		}
	}
	checkInvariants(t, newClient(t), ps[0])
	checkFair(t, ps[0])
	mustRelease(t, first)
	mustRelease(t, other)
}

// Refills are nobody's event: the waiter's reply says when its tenant's
// bucket covers it, and a re-check then serves it, though the pool's
// waiters re-check by themselves only once an hour.
func TestAWaiterOnItsTenantsLimitIsServedAtTheRefill(t *testing.T) {
	p := newPool(t, newClient(t), Options{RecheckInterval: time.Hour})
	ctx := context.Background()
	add(t, p, Resource{ID: "r", Capacity: 2})
	limits := []config.Limit{{Name: "requests", Max: 1, Per: 200 * time.Millisecond}}
	if err := p.SyncTenants(ctx, []Tenant{{Name: "a", Limits: limits}}); err != nil {
		t.Fatalf("SyncTenants: %v", err)
	}
	first, err := p.Acquire(ctx, WithTenant("a"))
	if err != nil {
		t.Fatalf("a's first Acquire: %v", err)
	}
	startHub(t, p)
	second := expectOnly(t, acquireWith(p, WithTenant("a")))
	if second.Token <= first.Token {
		t.Fatalf("token %d after %d", second.Token, first.Token)
	}
	mustRelease(t, first)
	mustRelease(t, second)
}

func TestStatsCountEachTenantsWaitersGrantsAndSettledUsage(t *testing.T) {
	ps, parked := replicas(t, 2, Options{RecheckInterval: time.Hour, ShareBy: "tokens"})
	ctx := context.Background()
	add(t, ps[0], Resource{ID: "r", Limits: []config.Limit{{Name: "tokens", Max: 1000, Per: time.Hour}}})
	l, err := ps[0].Acquire(ctx, WithTenant("a"), WithCost(config.Cost{"tokens": 100}))
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if err := l.Settle(ctx, config.Cost{"tokens": 30}); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	waiter := acquireWith(ps[1], WithTenant("b"), WithPriority(2))
	receive(t, parked, "b's waiter to block")
	want := []TenantStats{
		{Tenant: "b", Priority: 2, Queued: 1},
		{Tenant: "a", Grants: 1, Usage: 30},
	}
	if _, got, err := ps[1].Tenants(ctx); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Tenants: %+v, %v; want %+v", got, err, want)
	}
	mustRelease(t, l)
	mustRelease(t, expectOnly(t, waiter))
}

// checkFair checks the fair pool's records (lua/fair.lua) against the
// queue: each waiter of a class has its 'w' record and each 'w' record
// a waiter; each class with waiters has one 'r' record, which its 'm'
// record names, and no other class has one.
func checkFair(t *testing.T, p *Pool) {
	t.Helper()
	c := newClient(t)
	ctx := context.Background()
	records, err := c.ZRange(ctx, p.keys[8], 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	queue, _ := c.ZRange(ctx, p.keys[6], 0, -1).Result()
	req, _ := c.HGetAll(ctx, p.keys[4]).Result()
	waiters := map[string]bool{}   // 'w' records: cid + " " + request
	classes := map[string]string{} // cid -> its 'm' record's value
	ready := map[string]bool{}
	for _, m := range records {
		kind, rest := m[:1], m[1:]
		switch kind {
		case "w":
			f := strings.Fields(rest)
			waiters[f[0]+" "+f[2]] = true
		case "m":
			cid, v, _ := strings.Cut(rest, " ")
			classes[cid] = v
		case "r":
			ready[m] = true
		}
	}
	classed := map[string]bool{}
	for _, request := range queue {
		_, cls, ok := strings.Cut(req[request], " @")
		if !ok {
			continue
		}
		cid, _, _ := strings.Cut(cls, "/")
		classed[cid] = true
		if !waiters[cid+" "+request] {
			t.Errorf("waiter %s of class %s has no record", request, cid)
		}
		delete(waiters, cid+" "+request)
	}
	for w := range waiters {
		t.Errorf("record of no waiter: %s", w)
	}
	for cid := range classed {
		if !ready[classes[cid]] {
			t.Errorf("class %s with waiters is not ready (%q)", cid, classes[cid])
		}
		delete(ready, classes[cid])
	}
	for m := range ready {
		t.Errorf("ready record of a class without waiters: %s", m)
	}
}

func TestPlainWaitersKeepTheirOrderWhenATenantJoins(t *testing.T) {
	ps, parked := replicas(t, 2, Options{RecheckInterval: time.Hour})
	add(t, ps[0], Resource{ID: "r"})
	held := mustAcquire(t, ps[0])
	first := acquireWith(ps[0])
	receive(t, parked, "the first plain waiter to block")
	second := acquireWith(ps[1])
	receive(t, parked, "the second plain waiter to block")
	tenant := acquireWith(ps[1], WithTenant("a"))
	receive(t, parked, "the tenant's waiter to block")
	checkFair(t, ps[0])
	mustRelease(t, held)
	// The plain waiters are tenant "" now: the first, then tenant a
	// (which has used less), then the second.
	l := expectOnly(t, first, second, tenant)
	mustRelease(t, l)
	l = expectOnly(t, tenant, second)
	checkFair(t, ps[0])
	mustRelease(t, l)
	l = expectOnly(t, second)
	checkFair(t, ps[0])
	checkInvariants(t, newClient(t), ps[0])
	mustRelease(t, l)
}

func TestACancelledTenantWaiterLeavesItsClass(t *testing.T) {
	p := newPool(t, newClient(t), Options{RecheckInterval: time.Hour})
	parked := parkings(p)
	startHub(t, p)
	add(t, p, Resource{ID: "r"})
	held := mustAcquire(t, p)
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() {
		_, err := p.Acquire(ctx, WithTenant("a"), WithPriority(1))
		gone <- err
	}()
	receive(t, parked, "the waiter to block")
	checkFair(t, p)
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire: %v, want context.Canceled", err)
	}
	p.bg.Wait() // the give-up
	if s := stats(t, p); s.Queued != 0 {
		t.Fatalf("stats %+v, want nobody queued", s)
	}
	checkFair(t, p)
	checkInvariants(t, newClient(t), p)
	mustRelease(t, held)
}

// A slot that the server frees by itself goes to the tenant's waiter,
// not to a call without options that makes the server notice.
func TestANonWaitingCallDoesNotTakeASlotFromATenantsWaiter(t *testing.T) {
	ps, parked := replicas(t, 2, Options{RecheckInterval: time.Hour})
	c := newClient(t)
	add(t, ps[0], Resource{ID: "r"})
	expiring := mustAcquire(t, ps[1])
	waiter := acquireWith(ps[0], WithTenant("a"))
	receive(t, parked, "the tenant's waiter to block")
	if err := expiring.Extend(context.Background(), 50*time.Millisecond); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	waitServerTime(t, c, serverMillis(t, c)+60)
	if l, err := ps[1].TryAcquire(context.Background()); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("TryAcquire while a tenant waits: %v, %v; want ErrNoResourceAvailable", l, err)
	}
	l := expectOnly(t, waiter)
	checkFair(t, ps[0])
	mustRelease(t, l)
}

func TestACostNamingOnlyItsTenantsLimitIsKnown(t *testing.T) {
	p := newPool(t, newClient(t), Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "r"})
	budget := []config.Limit{{Name: "requests", Max: 10, Per: time.Minute}}
	if err := p.SyncTenants(ctx, []Tenant{{Name: "a", Limits: budget}}); err != nil {
		t.Fatalf("SyncTenants: %v", err)
	}
	cost := WithCost(config.Cost{"requests": 2})
	l, err := p.TryAcquire(ctx, cost, WithTenant("a"))
	if err != nil {
		t.Fatalf("a's call naming its own limit: %v", err)
	}
	mustRelease(t, l)
	if _, err := p.TryAcquire(ctx, cost, WithTenant("b")); !errors.Is(err, crserrors.ErrUnknownLimit) {
		t.Fatalf("b's call naming a's limit: %v, want ErrUnknownLimit", err)
	}
}
