package redispool

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

// Redis time cannot be faked: the buckets of these tests refill so
// slowly (a unit per minutes) that no test run lasts long enough to see
// a unit come back, unless the test means it to.
const day = 24 * time.Hour

func tokens(max int64) config.Limit { return config.Limit{Name: "tokens", Max: max, Per: day} }

func requests(max int64) config.Limit { return config.Limit{Name: "requests", Max: max, Per: day} }

func remaining(t *testing.T, p *Pool, id string) map[string]int64 {
	t.Helper()
	m, err := p.Remaining(context.Background(), id)
	if err != nil {
		t.Fatalf("Remaining(%q): %v", id, err)
	}
	return m
}

func wantRemaining(t *testing.T, p *Pool, id string, want map[string]int64) {
	t.Helper()
	got := remaining(t, p, id)
	if len(got) != len(want) {
		t.Fatalf("Remaining(%q) = %v, want %v", id, got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("Remaining(%q) = %v, want %v", id, got, want)
		}
	}
}

func tryCost(t *testing.T, p *Pool, cost config.Cost) (*Lease, error) {
	t.Helper()
	return p.TryAcquire(context.Background(), WithCost(cost))
}

func TestBadLimitsAreRefusedAndChangeNothing(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	cases := map[string]struct {
		limits []config.Limit
		want   error
	}{
		"zero max":                 {[]config.Limit{{Name: "tokens", Max: 0, Per: time.Minute}}, crserrors.ErrInvalidLimit},
		"zero per":                 {[]config.Limit{{Name: "tokens", Max: 5}}, crserrors.ErrInvalidLimit},
		"empty name":               {[]config.Limit{{Max: 5, Per: time.Minute}}, crserrors.ErrInvalidLimit},
		"duplicate":                {[]config.Limit{tokens(5), tokens(6)}, crserrors.ErrDuplicateLimit},
		"max too large":            {[]config.Limit{{Name: "tokens", Max: MaxLimitMax + 1, Per: time.Hour}}, ErrLimitTooLarge},
		"max too large for a week": {[]config.Limit{{Name: "tokens", Max: 14_892_854, Per: 7 * day}}, ErrLimitTooLarge},
		"per too long for max":     {[]config.Limit{{Name: "tokens", Max: 1 << 30, Per: 94906265 * time.Millisecond}}, ErrLimitTooLarge},
		"over MaxUnits":            {[]config.Limit{{Name: "tokens", Max: config.MaxUnits + 1, Per: time.Millisecond}}, crserrors.ErrInvalidLimit},
	}
	for name, tc := range cases {
		r := Resource{ID: "a", Limits: tc.limits}
		if err := p.Add(ctx, r); !errors.Is(err, tc.want) {
			t.Errorf("%s: Add = %v, want %v", name, err, tc.want)
		}
		if err := p.Sync(ctx, []Resource{r}); !errors.Is(err, tc.want) {
			t.Errorf("%s: Sync = %v, want %v", name, err, tc.want)
		}
	}
	if !errors.Is(ErrLimitTooLarge, crserrors.ErrInvalidLimit) {
		t.Error("ErrLimitTooLarge does not wrap ErrInvalidLimit")
	}
	if keys := poolKeys(t, c, p); len(keys) != 0 {
		t.Fatalf("refused limits left keys: %v", keys)
	}
	add(t, p, Resource{ID: "a", Limits: []config.Limit{tokens(10)}})
	for _, cost := range []config.Cost{{"tokens": -1}, {"tokens": config.MaxUnits + 1}} {
		if _, err := tryCost(t, p, cost); !errors.Is(err, crserrors.ErrInvalidCost) {
			t.Errorf("TryAcquire(%v) = %v, want ErrInvalidCost", cost, err)
		}
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if _, err := p.Acquire(ctx, WithCost(cost)); !errors.Is(err, crserrors.ErrInvalidCost) {
			t.Errorf("Acquire(%v) = %v, want ErrInvalidCost", cost, err)
		}
		cancel()
	}
	wantRemaining(t, p, "a", map[string]int64{"tokens": 10})
	checkInvariants(t, c, p)
}

func TestTheCostIsTakenInTheGrant(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	add(t, p, Resource{ID: "a", Capacity: 10, Limits: []config.Limit{tokens(100), requests(3)}})
	wantRemaining(t, p, "a", map[string]int64{"tokens": 100, "requests": 3})
	l, err := tryCost(t, p, config.Cost{"tokens": 60})
	if err != nil {
		t.Fatal(err)
	}
	// A limit the cost does not name costs 1.
	wantRemaining(t, p, "a", map[string]int64{"tokens": 40, "requests": 2})
	checkInvariants(t, c, p)
	if _, err := tryCost(t, p, config.Cost{"tokens": 41}); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("a cost the bucket does not cover: %v", err)
	}
	wantRemaining(t, p, "a", map[string]int64{"tokens": 40, "requests": 2})
	// No cost: 1 of each.
	l2 := mustAcquire(t, p)
	wantRemaining(t, p, "a", map[string]int64{"tokens": 39, "requests": 1})
	// A name the resource has no limit for is ignored, when allowed.
	l3, err := p.TryAcquire(context.Background(), WithCost(config.Cost{"tokens": 39, "images": 7}), AllowUnknownLimits())
	if err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, p, "a", map[string]int64{"tokens": 0, "requests": 0})
	// Spent: the resource rests off the index of available ones, with
	// slots free, so that a call without a cost never scans.
	if s := stats(t, p); s.Available != 0 || s.Suspended != 1 || s.Limited != 1 || s.Leases != 3 {
		t.Fatalf("stats %+v", s)
	}
	if _, err := p.TryAcquire(context.Background()); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("acquired from an empty bucket: %v", err)
	}
	checkInvariants(t, c, p)
	for _, l := range []*Lease{l, l2, l3} {
		mustRelease(t, l)
	}
	// Release refunds nothing: the estimate stands until Settle.
	wantRemaining(t, p, "a", map[string]int64{"tokens": 0, "requests": 0})
	checkInvariants(t, c, p)
}

func TestACostAboveEveryResourcesMaxFailsAtOnce(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	add(t, p, Resource{ID: "small", Priority: 1, Limits: []config.Limit{tokens(10)}},
		Resource{ID: "big", Priority: 2, Limits: []config.Limit{tokens(1000)}})
	// Above small's Max only: small is skipped.
	l, err := tryCost(t, p, config.Cost{"tokens": 500})
	if err != nil || l.ID != "big" {
		t.Fatalf("TryAcquire = %v, %v; want big", l, err)
	}
	if _, err := tryCost(t, p, config.Cost{"tokens": 1001}); !errors.Is(err, crserrors.ErrCostExceedsLimits) {
		t.Fatalf("TryAcquire above every Max: %v", err)
	}
	// Acquire does not wait for what can never be.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.Acquire(ctx, WithCost(config.Cost{"tokens": 1001})); !errors.Is(err, crserrors.ErrCostExceedsLimits) {
		t.Fatalf("Acquire above every Max: %v", err)
	}
	// A resource without limits covers any cost.
	add(t, p, Resource{ID: "free", Priority: 3})
	l2, err := tryCost(t, p, config.Cost{"tokens": 1001})
	if err != nil || l2.ID != "free" {
		t.Fatalf("TryAcquire = %v, %v; want free", l2, err)
	}
	mustRelease(t, l)
	mustRelease(t, l2)
	checkInvariants(t, c, p)
}

func TestSettleRefundsAndChargesWhatWasSpent(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "a", Capacity: 5, Limits: []config.Limit{tokens(100), requests(10)}})
	l, err := tryCost(t, p, config.Cost{"tokens": 50})
	if err != nil {
		t.Fatal(err)
	}
	// Less than the estimate: the difference comes back; requests,
	// which actual does not name, keep their estimate.
	if err := l.Settle(ctx, config.Cost{"tokens": 20}); err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, p, "a", map[string]int64{"tokens": 80, "requests": 9})
	// Settling again corrects the last settlement, not the estimate.
	if err := l.Settle(ctx, config.Cost{"tokens": 30}); err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, p, "a", map[string]int64{"tokens": 70, "requests": 9})
	// More than the bucket holds: a debt, and the resource rests.
	if err := l.Settle(ctx, config.Cost{"tokens": 150}); err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, p, "a", map[string]int64{"tokens": -50, "requests": 9})
	if _, err := tryCost(t, p, config.Cost{"tokens": 0}); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("a bucket in debt covered a cost: %v", err)
	}
	if s := stats(t, p); s.Limited != 1 || s.Available != 0 {
		t.Fatalf("stats %+v", s)
	}
	checkInvariants(t, c, p)
	// Repaid by a refund: back at once.
	if err := l.Settle(ctx, config.Cost{"tokens": 0}); err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, p, "a", map[string]int64{"tokens": 100, "requests": 9})
	if s := stats(t, p); s.Limited != 0 || s.Available != 1 {
		t.Fatalf("stats %+v", s)
	}
	if err := l.Settle(ctx, config.Cost{"tokens": -1}); !errors.Is(err, crserrors.ErrInvalidCost) {
		t.Fatalf("Settle(-1) = %v", err)
	}
	mustRelease(t, l)
	if err := l.Settle(ctx, config.Cost{"tokens": 1}); !errors.Is(err, crserrors.ErrLeaseReleased) {
		t.Fatalf("Settle after Release = %v", err)
	}
	wantRemaining(t, p, "a", map[string]int64{"tokens": 100, "requests": 9})
	checkInvariants(t, c, p)
}

func TestSettleOfAnExpiredLeaseChangesNothing(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{LeaseTTL: 50 * time.Millisecond})
	add(t, p, Resource{ID: "a", Limits: []config.Limit{tokens(100)}})
	l, err := tryCost(t, p, config.Cost{"tokens": 50})
	if err != nil {
		t.Fatal(err)
	}
	waitServerTime(t, c, serverMillis(t, c)+100)
	if err := l.Settle(context.Background(), config.Cost{"tokens": 0}); !errors.Is(err, crserrors.ErrLeaseExpired) {
		t.Fatalf("Settle of an expired lease = %v", err)
	}
	wantRemaining(t, p, "a", map[string]int64{"tokens": 50})
	checkInvariants(t, c, p)
}

func TestAResentSettleAppliesOnce(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "a", Limits: []config.Limit{tokens(100)}})
	l, err := tryCost(t, p, config.Cost{"tokens": 10})
	if err != nil {
		t.Fatal(err)
	}
	// What go-redis does when a connection breaks before the reply: the
	// same command, request included, twice.
	request := newRequest()
	for range 2 {
		if _, _, err := p.run(ctx, scriptSettle, request, l.member, formatCost(config.Cost{"tokens": 30}), ""); err != nil {
			t.Fatal(err)
		}
	}
	wantRemaining(t, p, "a", map[string]int64{"tokens": 70})
	mustRelease(t, l)
}

func TestSyncKeepsBucketLevelsClampedToTheNewMax(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "a", Capacity: 3, Limits: []config.Limit{tokens(100), requests(10)}})
	l, err := tryCost(t, p, config.Cost{"tokens": 30})
	if err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, p, "a", map[string]int64{"tokens": 70, "requests": 9})
	// A larger Max is reached by refilling, not granted; a new limit
	// starts full; a dropped one goes.
	sync := func(limits ...config.Limit) {
		t.Helper()
		if err := p.Sync(ctx, []Resource{{ID: "a", Capacity: 3, Limits: limits}}); err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, c, p)
	}
	sync(tokens(200), config.Limit{Name: "images", Max: 4, Per: day})
	wantRemaining(t, p, "a", map[string]int64{"tokens": 70, "images": 4})
	sync(tokens(50), config.Limit{Name: "images", Max: 4, Per: day})
	wantRemaining(t, p, "a", map[string]int64{"tokens": 50, "images": 4})
	// Another Per keeps the whole units.
	sync(config.Limit{Name: "tokens", Max: 50, Per: 2 * day})
	wantRemaining(t, p, "a", map[string]int64{"tokens": 50})
	// Add of an existing resource changes nothing.
	if err := p.Add(ctx, Resource{ID: "a", Limits: []config.Limit{tokens(1)}}); !errors.Is(err, crserrors.ErrDuplicateKey) {
		t.Fatalf("Add of an existing resource = %v", err)
	}
	wantRemaining(t, p, "a", map[string]int64{"tokens": 50})
	// The lease settles into the bucket that kept its name.
	if err := l.Settle(ctx, config.Cost{"tokens": 0}); err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, p, "a", map[string]int64{"tokens": 50})
	// Lowered below the level of a resting resource... and no limits at
	// all: a plain resource again.
	sync()
	wantRemaining(t, p, "a", map[string]int64{})
	mustRelease(t, l)
	checkInvariants(t, c, p)
}

func TestRemainingOfAnUnknownResource(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	add(t, p, Resource{ID: "a"})
	if _, err := p.Remaining(context.Background(), "b"); !errors.Is(err, crserrors.ErrResourceNotFound) {
		t.Fatalf("Remaining(b) = %v", err)
	}
	wantRemaining(t, p, "a", map[string]int64{})
}

// acquireCostAsync starts an Acquire with cost, bounded as acquireAsync.
func acquireCostAsync(p *Pool, cost config.Cost) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		l, err := p.Acquire(ctx, WithCost(cost))
		ch <- acquired{l, err}
	}()
	return ch
}

func TestAWaiterIsServedByTheRefundThatCoversItsCost(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{RecheckInterval: time.Hour})
	other := newPool(t, newClient(t), Options{Name: p.name, RecheckInterval: time.Hour})
	add(t, p, Resource{ID: "a", Capacity: 5, Limits: []config.Limit{tokens(100)}})
	held, err := tryCost(t, p, config.Cost{"tokens": 90})
	if err != nil {
		t.Fatal(err)
	}
	parked := parkings(other)
	startHub(t, other)
	got := queueCost(t, other, parked, config.Cost{"tokens": 50})
	// Queued beside a free slot whose bucket does not cover the cost:
	// a wait that the limits caused.
	if s := stats(t, p); s.Available != 1 || s.LimitWaits != 1 {
		t.Fatalf("stats %+v", s)
	}
	checkInvariants(t, c, p)
	// The refund covers it, and the settling script hands it over.
	if err := held.Settle(context.Background(), config.Cost{"tokens": 10}); err != nil {
		t.Fatal(err)
	}
	l := expectOnly(t, got)
	if l.ID != "a" {
		t.Fatalf("got %q", l.ID)
	}
	wantRemaining(t, p, "a", map[string]int64{"tokens": 40})
	mustRelease(t, l)
	mustRelease(t, held)
	checkInvariants(t, c, p)
}

// The queue is strict FIFO: a small call does not overtake a big one
// that waits for its cost, so the big one is never starved.
func TestASmallCostWaitsBehindABigOne(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{RecheckInterval: time.Hour})
	add(t, p, Resource{ID: "a", Capacity: 5, Limits: []config.Limit{tokens(100)}})
	held, err := tryCost(t, p, config.Cost{"tokens": 90})
	if err != nil {
		t.Fatal(err)
	}
	parked := parkings(p)
	startHub(t, p)
	big := queueCost(t, p, parked, config.Cost{"tokens": 80})
	small := queueCost(t, p, parked, config.Cost{"tokens": 5})
	if _, err := tryCost(t, p, config.Cost{"tokens": 1}); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("TryAcquire overtook the queue: %v", err)
	}
	checkInvariants(t, c, p)
	if err := held.Settle(context.Background(), config.Cost{"tokens": 0}); err != nil {
		t.Fatal(err)
	}
	lb := expectOnly(t, big)
	ls := expectOnly(t, small)
	wantRemaining(t, p, "a", map[string]int64{"tokens": 100 - 80 - 5})
	for _, l := range []*Lease{lb, ls, held} {
		mustRelease(t, l)
	}
	checkInvariants(t, c, p)
}

// queueCost starts an Acquire with cost on p and returns once it waits
// in the server's queue.
func queueCost(t *testing.T, p *Pool, parked <-chan struct{}, cost config.Cost) <-chan acquired {
	t.Helper()
	ch := acquireCostAsync(p, cost)
	receive(t, parked, "the waiter to block")
	return ch
}

// A waiter whose cost only a refill covers is woken by the server's
// schedule, never by polling: it never re-checks on its own (the
// interval is an hour), so only the time the server gave it can wake it.
func TestAWaiterWakesAtTheRefillThatCoversItsCost(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{RecheckInterval: time.Hour})
	// A unit every 20 ms.
	add(t, p, Resource{ID: "a", Capacity: 5, Limits: []config.Limit{{Name: "tokens", Max: 10, Per: 200 * time.Millisecond}}})
	held, err := tryCost(t, p, config.Cost{"tokens": 10})
	if err != nil {
		t.Fatal(err)
	}
	parked := parkings(p)
	startHub(t, p)
	got := queueCost(t, p, parked, config.Cost{"tokens": 8})
	l := expectOnly(t, got)
	if left := remaining(t, p, "a")["tokens"]; left > 2 || left < 0 {
		t.Fatalf("%d tokens left after the wait, want 0 to 2", left)
	}
	mustRelease(t, l)
	mustRelease(t, held)
	checkInvariants(t, c, p)
}

func TestFailuresInARowEjectAResource(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{Ejection: config.Ejection{ConsecutiveFailures: 2, BaseTime: time.Hour}})
	ctx := context.Background()
	add(t, p, Resource{ID: "a", Priority: 1}, Resource{ID: "b", Priority: 2})
	fail := func(want string) {
		t.Helper()
		l := mustAcquire(t, p)
		if l.ID != want {
			t.Fatalf("acquired %q, want %q", l.ID, want)
		}
		if err := l.Fail(ctx); err != nil {
			t.Fatal(err)
		}
		if err := l.Fail(ctx); !errors.Is(err, crserrors.ErrLeaseReleased) {
			t.Fatalf("second Fail: %v", err)
		}
	}
	// A success in between starts the count again.
	fail("a")
	mustRelease(t, mustAcquire(t, p))
	fail("a")
	if s := stats(t, p); s.Suspended != 0 {
		t.Fatalf("ejected after failures that were not in a row: %+v", s)
	}
	fail("a")
	if s := stats(t, p); s.Suspended != 1 || s.Available != 1 {
		t.Fatalf("not ejected: %+v", s)
	}
	checkInvariants(t, c, p)
	// The last resource that is neither ejected nor excluded stays.
	fail("b")
	fail("b")
	if s := stats(t, p); s.Suspended != 1 || s.Available != 1 {
		t.Fatalf("the last resource was ejected: %+v", s)
	}
	// The second ejection lasts twice the first.
	if err := p.Include(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	fail("a")
	before := serverMillis(t, c)
	fail("a")
	if end := suspendedUntil(t, p, "a"); end < before+2*3_600_000 || end > serverMillis(t, c)+2*3_600_000 {
		t.Fatalf("second ejection ends at %d, %d ms after", end, end-before)
	}
	checkInvariants(t, c, p)
	// Without Ejection, Fail only ends the lease.
	q := newPool(t, c, Options{})
	add(t, q, Resource{ID: "a"}, Resource{ID: "b"})
	for range 5 {
		if err := mustAcquire(t, q).Fail(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if s := stats(t, q); s.Suspended != 0 || s.Available != 2 {
		t.Fatalf("stats %+v", s)
	}
	checkInvariants(t, c, q)
}

func TestObserveLowersABucketToWhatTheProviderReports(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "a", Capacity: 2, Limits: []config.Limit{tokens(100), requests(10)}})
	l := mustAcquire(t, p)
	wantRemaining(t, p, "a", map[string]int64{"tokens": 99, "requests": 9})
	// Full again in half the window: at most half of Max now.
	if err := l.Observe(ctx, "tokens", 100, 12*time.Hour); err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, p, "a", map[string]int64{"tokens": 50, "requests": 9})
	// Never raised.
	if err := l.Observe(ctx, "tokens", 80, 0); err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, p, "a", map[string]int64{"tokens": 50, "requests": 9})
	// A reset longer than the window: only remaining counts.
	if err := l.Observe(ctx, "tokens", 40, 3*day); err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, p, "a", map[string]int64{"tokens": 40, "requests": 9})
	for _, bad := range []struct {
		name      string
		remaining int64
		reset     time.Duration
		want      error
	}{
		{"images", 1, 0, crserrors.ErrUnknownLimit},
		{"tokens", -1, 0, crserrors.ErrInvalidCost},
		{"tokens", config.MaxUnits + 1, 0, crserrors.ErrInvalidCost},
		{"tokens", 1, -time.Second, crserrors.ErrInvalidDuration},
	} {
		if err := l.Observe(ctx, bad.name, bad.remaining, bad.reset); !errors.Is(err, bad.want) {
			t.Errorf("Observe(%q, %d, %v) = %v, want %v", bad.name, bad.remaining, bad.reset, err, bad.want)
		}
	}
	wantRemaining(t, p, "a", map[string]int64{"tokens": 40, "requests": 9})
	// Nothing left: the resource rests, though a slot is free.
	if err := l.Observe(ctx, "requests", 0, 0); err != nil {
		t.Fatal(err)
	}
	if s := stats(t, p); s.Limited != 1 || s.Available != 0 {
		t.Fatalf("stats %+v", s)
	}
	checkInvariants(t, c, p)
	mustRelease(t, l)
	if err := l.Observe(ctx, "tokens", 1, 0); !errors.Is(err, crserrors.ErrLeaseReleased) {
		t.Fatalf("Observe after Release = %v", err)
	}
	wantRemaining(t, p, "a", map[string]int64{"tokens": 40, "requests": 0})
	checkInvariants(t, c, p)
}

// A release that frees a slot whose buckets do not cover the oldest
// waiter yet tells it to look again, so that it learns when the refill
// will (nothing else would wake it: no lease runs, nothing is
// suspended, and it never re-checks on its own).
func TestAWaiterLearnsOfTheRefillOfASlotThatARelease(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{RecheckInterval: time.Hour})
	// A unit every 200 ms.
	add(t, p, Resource{ID: "a", Limits: []config.Limit{{Name: "tokens", Max: 10, Per: 2 * time.Second}}})
	held, err := tryCost(t, p, config.Cost{"tokens": 10})
	if err != nil {
		t.Fatal(err)
	}
	parked := parkings(p)
	startHub(t, p)
	got := queueCost(t, p, parked, config.Cost{"tokens": 8})
	mustRelease(t, held)
	l := expectOnly(t, got)
	mustRelease(t, l)
	checkInvariants(t, c, p)
}

// Among equal priorities, the resource with the most budget left (its
// tightest bucket full again first) goes first, then fewer holders, as
// in the core: load spreads by remaining quota.
func TestTiesGoToTheResourceWithTheMostBudgetLeft(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "a", Capacity: 10, Limits: []config.Limit{tokens(1000)}},
		Resource{ID: "b", Capacity: 10, Limits: []config.Limit{tokens(1000)}})
	first, err := tryCost(t, p, config.Cost{"tokens": 300})
	if err != nil {
		t.Fatal(err)
	}
	// The other one, whose bucket is full, though it has as many
	// holders once this one is released.
	mustRelease(t, first)
	second, err := tryCost(t, p, config.Cost{"tokens": 100})
	if err != nil || second.ID == first.ID {
		t.Fatalf("second lease %v, %v: want the other resource than %q", second, err, first.ID)
	}
	// Now first has 700 left, second 900: second again, though it has a
	// holder and first none.
	third, err := tryCost(t, p, config.Cost{"tokens": 100})
	if err != nil || third.ID != second.ID {
		t.Fatalf("third lease %v, %v: want %q", third, err, second.ID)
	}
	// Settlements put first ahead again: 700 against 800 + 100 - 250.
	if err := third.Settle(ctx, config.Cost{"tokens": 0}); err != nil {
		t.Fatal(err)
	}
	if err := second.Settle(ctx, config.Cost{"tokens": 350}); err != nil {
		t.Fatal(err)
	}
	fourth, err := tryCost(t, p, config.Cost{"tokens": 1})
	if err != nil || fourth.ID != first.ID {
		t.Fatalf("fourth lease %v, %v: want %q", fourth, err, first.ID)
	}
	checkInvariants(t, c, p)
	for _, l := range []*Lease{second, third, fourth} {
		mustRelease(t, l)
	}
	checkInvariants(t, c, p)
}

func TestEjectionKeepsToTheMaxEjectedShare(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{Ejection: config.Ejection{ConsecutiveFailures: 1, BaseTime: time.Hour, MaxEjectedShare: 0.25}})
	ctx := context.Background()
	for i, id := range []string{"a", "b", "c", "d"} {
		add(t, p, Resource{ID: id, Priority: float64(i)})
	}
	for range 2 {
		if err := mustAcquire(t, p).Fail(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// a is ejected; b failed too, but a quarter of four is one.
	if s := stats(t, p); s.Suspended != 1 || s.Available != 3 {
		t.Fatalf("stats %+v", s)
	}
	if l := mustAcquire(t, p); l.ID != "b" {
		t.Fatalf("acquired %q, want b", l.ID)
	}
	checkInvariants(t, c, p)
}

// A bucket that Sync drops and adds again while a lease runs is a new
// one: the lease did not pay into it, and its Settle leaves it alone, as
// the core's.
func TestSettleLeavesABucketAddedSinceTheGrantAlone(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "a", Capacity: 2, Limits: []config.Limit{tokens(100), requests(10)}})
	l, err := tryCost(t, p, config.Cost{"tokens": 40})
	if err != nil {
		t.Fatal(err)
	}
	for _, limits := range [][]config.Limit{{requests(10)}, {tokens(100), requests(10)}} {
		if err := p.Sync(ctx, []Resource{{ID: "a", Capacity: 2, Limits: limits}}); err != nil {
			t.Fatal(err)
		}
	}
	wantRemaining(t, p, "a", map[string]int64{"tokens": 100, "requests": 9})
	if err := l.Settle(ctx, config.Cost{"tokens": 90, "requests": 0}); err != nil {
		t.Fatal(err)
	}
	// requests, which stayed, is settled; tokens, born since, is not.
	wantRemaining(t, p, "a", map[string]int64{"tokens": 100, "requests": 10})
	// A lease granted since pays into it and settles it.
	l2, err := tryCost(t, p, config.Cost{"tokens": 40})
	if err != nil {
		t.Fatal(err)
	}
	if err := l2.Settle(ctx, config.Cost{"tokens": 10}); err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, p, "a", map[string]int64{"tokens": 90, "requests": 9})
	mustRelease(t, l)
	mustRelease(t, l2)
	checkInvariants(t, c, p)
}

// A resource removed while leased and put back by Sync with the same
// limits must rest if a settlement left a bucket without a unit while
// it drained: a call without a cost takes the best listed resource
// without looking at its buckets.
func TestSyncBackOfADrainingResourceInDebtRests(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	r := Resource{ID: "a", Capacity: 2, Limits: []config.Limit{tokens(10)}}
	add(t, p, r)
	l := mustAcquire(t, p)
	if err := p.Remove(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := l.Settle(ctx, config.Cost{"tokens": 12}); err != nil {
		t.Fatal(err)
	}
	if err := p.Sync(ctx, []Resource{r}); err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, c, p)
	wantRemaining(t, p, "a", map[string]int64{"tokens": -2})
	if l2, err := p.TryAcquire(ctx); err == nil {
		t.Errorf("a bucket in debt granted a lease: %v left", remaining(t, p, "a"))
		mustRelease(t, l2)
	}
	if bad := overdrawn(readState(t, c, p)); len(bad) != 1 {
		t.Errorf("overdrawn: %v", bad)
	}
	mustRelease(t, l)
}

// Include ends exclusions, suspensions and ejections, not a rest for the
// buckets: as in the core, no one may refill a bucket early. An idle
// resource resting for its buckets gets ErrResourceNotExcluded, and
// nothing changes.
func TestIncludeDoesNotEndARestForTheBuckets(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	add(t, p, Resource{ID: "a", Capacity: 2, Limits: []config.Limit{requests(1)}})
	mustRelease(t, mustAcquire(t, p))
	if s := stats(t, p); s.Leases != 0 || s.Limited != 1 {
		t.Fatalf("stats %+v, want an idle resource resting for its buckets", s)
	}
	if err := p.Include(context.Background(), "a"); !errors.Is(err, crserrors.ErrResourceNotExcluded) {
		t.Fatalf("Include of a resource resting for its buckets: %v", err)
	}
	wantRemaining(t, p, "a", map[string]int64{"requests": 0})
	if _, err := p.TryAcquire(context.Background()); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("acquired after the Include: %v", err)
	}
	checkInvariants(t, c, p)
}
