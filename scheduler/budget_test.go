package scheduler_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/scheduler"
)

// apiKey is a resource with a provider's limits: requests and tokens per
// minute, 0 for none.
type apiKey struct {
	ID       string
	Priority int
	RPM, TPM int64
}

func keyLimits(k *apiKey) []config.Limit {
	var ls []config.Limit
	if k.RPM != 0 {
		ls = append(ls, config.Limit{Name: "requests", Max: k.RPM, Per: time.Minute})
	}
	if k.TPM != 0 {
		ls = append(ls, config.Limit{Name: "tokens", Max: k.TPM, Per: time.Minute})
	}
	return ls
}

func newKeyPool(t *testing.T, clock config.Clock, policy config.AcquirePolicy, heaps int, keys ...*apiKey) *scheduler.Scheduler[*apiKey, string] {
	t.Helper()
	return newKeyPoolWith(t, config.Config[*apiKey, string]{HeapCount: heaps, AcquirePolicy: policy, Clock: clock}, keys...)
}

// newKeyPoolWith is newKeyPool for any configuration: cfg's comparator
// (by priority if nil), the keys' IDs and limits, checked against the
// state model and shut down when the test ends.
func newKeyPoolWith(t *testing.T, cfg config.Config[*apiKey, string], keys ...*apiKey) *scheduler.Scheduler[*apiKey, string] {
	t.Helper()
	if cfg.Comparator == nil {
		cfg.Comparator = func(a, b *apiKey) int { return cmp.Compare(a.Priority, b.Priority) }
	}
	cfg.KeyFunc = func(k *apiKey) string { return k.ID }
	cfg.Limits = keyLimits
	s, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.CheckInvariants(); err != nil {
			t.Errorf("invariants at end of test: %v", err)
		}
		s.Shutdown()
	})
	for _, k := range keys {
		if err := s.Add(k); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func tokens(n int64) scheduler.LeaseOption { return scheduler.WithCost(config.Cost{"tokens": n}) }

// leaseNow leases with opts, failing the test if it cannot.
func leaseNow(t *testing.T, s *scheduler.Scheduler[*apiKey, string], opts ...scheduler.LeaseOption) scheduler.Lease[*apiKey, string] {
	t.Helper()
	l, err := s.Lease(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// leaseLater starts a caller that leases with opts and releases at once,
// and returns where its error comes.
func leaseLater(ctx context.Context, s *scheduler.Scheduler[*apiKey, string], opts ...scheduler.LeaseOption) <-chan error {
	done := make(chan error, 1)
	go func() {
		l, err := s.Lease(ctx, opts...)
		if err == nil {
			err = l.Release()
		}
		done <- err
	}()
	return done
}

func wantRemaining(t *testing.T, s *scheduler.Scheduler[*apiKey, string], id string, want map[string]int64) {
	t.Helper()
	got, err := s.Remaining(id)
	if err != nil {
		t.Fatalf("Remaining(%s): %v", id, err)
	}
	if len(got) != len(want) {
		t.Fatalf("Remaining(%s) = %v, want %v", id, got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("Remaining(%s) = %v, want %v", id, got, want)
		}
	}
}

// leaseKeyLater starts a caller that leases c tokens and releases at
// once, and returns where the key it got, or its error's text, comes.
func leaseKeyLater(s *scheduler.Scheduler[*apiKey, string], c int64) <-chan string {
	got := make(chan string, 1)
	go func() {
		l, err := s.Lease(context.Background(), tokens(c))
		if err != nil {
			got <- err.Error()
			return
		}
		got <- l.Key()
		l.Release()
	}()
	return got
}

// untilArmed spins until the fake clock has n timers pending: the oldest
// waiter, having found no budget that covers its cost, has armed the
// wake that serves it. Advancing the clock before that would let the
// waiter read the clock before the advance and arm its wake after it, for
// an instant the test never advances past.
func untilArmed(t *testing.T, clock *fakeclock.Clock, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for clock.Pending() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d timers pending, want %d", clock.Pending(), n)
		}
		runtime.Gosched()
	}
}

func TestLeaseTakesItsCostFromEveryBucketAtTheGrant(t *testing.T) {
	clock := fakeclock.New()
	s := newKeyPool(t, clock, config.Exclusive, 1, &apiKey{ID: "a", RPM: 10, TPM: 1000})
	l := leaseNow(t, s, tokens(300))
	wantRemaining(t, s, "a", map[string]int64{"requests": 9, "tokens": 700})
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	// Releasing gives back the slot, not the budget: the call was made.
	wantRemaining(t, s, "a", map[string]int64{"requests": 9, "tokens": 700})
	// A plain Acquire spends the default cost, 1 of each limit.
	if _, err := s.Acquire(); err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, s, "a", map[string]int64{"requests": 8, "tokens": 699})
}

func TestSettleRefundsWhatTheCallDidNotSpend(t *testing.T) {
	s := newKeyPool(t, fakeclock.New(), config.Shared, 1, &apiKey{ID: "a", TPM: 1000})
	l := leaseNow(t, s, tokens(500))
	if err := l.Settle(config.Cost{"tokens": 120}); err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, s, "a", map[string]int64{"tokens": 880})
	// A second settlement corrects the first, not the estimate.
	if err := l.Settle(config.Cost{"tokens": 200}); err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, s, "a", map[string]int64{"tokens": 800})
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "Settle after Release", l.Settle(config.Cost{"tokens": 0}), crserrors.ErrLeaseReleased)
	wantRemaining(t, s, "a", map[string]int64{"tokens": 800})
}

func TestSettlementInDebtRestsTheResourceUntilRepaid(t *testing.T) {
	clock := fakeclock.New()
	s := newKeyPool(t, clock, config.Shared, 1, &apiKey{ID: "a", TPM: 600}) // 10 tokens a second
	l := leaseNow(t, s, tokens(100))
	if err := l.Settle(config.Cost{"tokens": 700}); err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, s, "a", map[string]int64{"tokens": -100})
	if got := s.StateOf("a"); got != "resting" {
		t.Fatalf("a in debt is %s, want resting", got)
	}
	wantErr(t, "Acquire in debt", func() error { _, err := s.Acquire(); return err }(), crserrors.ErrNoResourceAvailable)
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	// 100 tokens of debt and 1 more take 10.1 s to refill.
	clock.Advance(10100*time.Millisecond - 1)
	if got := s.StateOf("a"); got != "resting" {
		t.Fatalf("a, 1 ns short of a unit, is %s, want resting", got)
	}
	clock.Advance(1)
	if got := s.StateOf("a"); got != "active" {
		t.Fatalf("a, repaid, is %s, want active", got)
	}
}

func TestACostGoesToTheBestResourceThatCoversIt(t *testing.T) {
	s := newKeyPool(t, fakeclock.New(), config.Shared, 1,
		&apiKey{ID: "small", Priority: 0, TPM: 100},
		&apiKey{ID: "large", Priority: 1, TPM: 1000})
	l := leaseNow(t, s, tokens(500))
	if l.Key() != "large" {
		t.Fatalf("a cost of 500 went to %s, whose bucket holds 100", l.Key())
	}
	l.Release()
	if l, _ = s.Lease(context.Background(), tokens(50)); l.Key() != "small" {
		t.Fatalf("a cost of 50 went to %s, want the better small", l.Key())
	}
	l.Release()
}

func TestCostAboveEveryLimitFailsAtOnce(t *testing.T) {
	s := newKeyPool(t, fakeclock.New(), config.Shared, 1,
		&apiKey{ID: "a", TPM: 100}, &apiKey{ID: "b", TPM: 200})
	_, err := s.Lease(context.Background(), tokens(201))
	wantErr(t, "Lease above every Max", err, crserrors.ErrCostExceedsLimits)
	// One resource without a tokens limit can serve anything.
	if err := s.Add(&apiKey{ID: "c", RPM: 5}); err != nil {
		t.Fatal(err)
	}
	l, err := s.Lease(context.Background(), tokens(201))
	if err != nil || l.Key() != "c" {
		t.Fatalf("Lease = %v, %v; want c", l.Key(), err)
	}
	l.Release()
	if err := s.Remove("c"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Lease(context.Background(), tokens(201))
	wantErr(t, "Lease above every Max after Remove", err, crserrors.ErrCostExceedsLimits)
}

func TestInvalidCostsAndLimitsChangeNothing(t *testing.T) {
	s := newKeyPool(t, fakeclock.New(), config.Shared, 1, &apiKey{ID: "a", TPM: 100})
	_, err := s.Lease(context.Background(), tokens(-1))
	wantErr(t, "negative cost", err, crserrors.ErrInvalidCost)
	wantErr(t, "Add with Max 0", s.Add(&apiKey{ID: "b", TPM: -1}), crserrors.ErrInvalidLimit)
	if got := s.StateOf("b"); got != "absent" {
		t.Fatalf("b after a refused Add is %s", got)
	}
	wantErr(t, "Update with Max 0", s.Update(&apiKey{ID: "a", TPM: -5}), crserrors.ErrInvalidLimit)
	wantErr(t, "BatchAdd with Max 0", s.BatchAdd([]*apiKey{{ID: "c", TPM: 10}, {ID: "d", TPM: -1}}), crserrors.ErrInvalidLimit)
	if got := s.StateOf("c"); got != "absent" {
		t.Fatalf("c after a refused BatchAdd is %s", got)
	}
	if err := s.BatchAdd([]*apiKey{{ID: "e", Priority: 1, TPM: 10}}); err != nil {
		t.Fatalf("BatchAdd with valid limits: %v", err)
	}
	wantRemaining(t, s, "e", map[string]int64{"tokens": 10})
	wantRemaining(t, s, "a", map[string]int64{"tokens": 100})
	l, _ := s.Lease(context.Background())
	wantErr(t, "Settle negative", l.Settle(config.Cost{"tokens": -3}), crserrors.ErrInvalidCost)
	wantErr(t, "Observe unknown", l.Observe("requests", 1, 0), crserrors.ErrUnknownLimit)
	wantErr(t, "Observe negative", l.Observe("tokens", -1, 0), crserrors.ErrInvalidCost)
	wantErr(t, "Observe above MaxUnits", l.Observe("tokens", config.MaxUnits+1, 0), crserrors.ErrInvalidCost)
	wantErr(t, "Observe negative reset", l.Observe("tokens", 0, -time.Second), crserrors.ErrInvalidDuration)
	if err := l.Observe("tokens", config.MaxUnits, 0); err != nil { // the largest valid, and no raise
		t.Fatalf("Observe MaxUnits: %v", err)
	}
	wantRemaining(t, s, "a", map[string]int64{"tokens": 99})
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "Observe after Release", l.Observe("tokens", 0, 0), crserrors.ErrLeaseReleased)
	wantRemaining(t, s, "a", map[string]int64{"tokens": 99})
}

func TestObserveLowersTheBucketToWhatTheProviderReports(t *testing.T) {
	clock := fakeclock.New()
	s := newKeyPool(t, clock, config.Shared, 1, &apiKey{ID: "a", TPM: 600})
	l := leaseNow(t, s, tokens(100))
	// The provider counts more than this bucket did: 50 left.
	if err := l.Observe("tokens", 50, 55*time.Second); err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, s, "a", map[string]int64{"tokens": 50})
	// It never raises the level.
	if err := l.Observe("tokens", 590, time.Second); err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, s, "a", map[string]int64{"tokens": 50})
	// Nothing left: the resource rests until it has a unit.
	if err := l.Observe("tokens", 0, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := s.StateOf("a"); got != "resting" {
		t.Fatalf("a with nothing left is %s", got)
	}
	l.Release()
	clock.Advance(100 * time.Millisecond)
	if got := s.StateOf("a"); got != "active" {
		t.Fatalf("a after a unit refilled is %s", got)
	}
}

func TestAWaiterIsServedAtTheRefillThatCoversIt(t *testing.T) {
	clock := fakeclock.New()
	s := newKeyPool(t, clock, config.Shared, 1, &apiKey{ID: "a", TPM: 600}) // 10 tokens a second
	l := leaseNow(t, s, tokens(500))
	l.Release()
	got := leaseLater(context.Background(), s, tokens(400))
	untilWaiters(t, s, 1)
	untilArmed(t, clock, 1)
	// 100 left; 400 needs 30 s more.
	clock.Advance(30*time.Second - 1)
	select {
	case err := <-got:
		t.Fatalf("served 1 ns before the bucket covers the cost: %v", err)
	default:
	}
	clock.Advance(1)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, s, "a", map[string]int64{"tokens": 0})
	if st := s.Stats(); st.LimitWaits != 1 {
		t.Fatalf("LimitWaits = %d, want 1", st.LimitWaits)
	}
}

func TestALargeCostIsNotStarvedBySmallOnes(t *testing.T) {
	clock := fakeclock.New()
	s := newKeyPool(t, clock, config.Shared, 1, &apiKey{ID: "a", TPM: 600})
	l, _ := s.Lease(context.Background(), tokens(550))
	l.Release()
	big := leaseLater(context.Background(), s, tokens(500))
	untilWaiters(t, s, 1)
	untilArmed(t, clock, 1)
	// 50 left would cover a small call, but it queues behind the big one.
	small := leaseLater(context.Background(), s, tokens(10))
	untilWaiters(t, s, 2)
	if _, err := s.Acquire(); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("Acquire past queued waiters: %v", err)
	}
	wantRemaining(t, s, "a", map[string]int64{"tokens": 50})
	clock.Advance(45 * time.Second) // 500
	if err := <-big; err != nil {
		t.Fatal(err)
	}
	// The small call waits for its own 10 tokens, one second.
	clock.Advance(time.Second)
	if err := <-small; err != nil {
		t.Fatal(err)
	}
}

// AcquireByAffinity keeps the FIFO order of a pool with limits as Acquire
// does: served while no one waits, refused while a waiter is queued.
func TestAcquireByAffinityDoesNotPassQueuedWaiters(t *testing.T) {
	clock := fakeclock.New()
	s := newKeyPool(t, clock, config.Shared, 1, &apiKey{ID: "a", TPM: 600})
	id := acquire.StringIdentifier("user-1")
	if k, err := s.AcquireByAffinity(id); err != nil || k.ID != "a" {
		t.Fatalf("AcquireByAffinity with no one waiting = %v, %v; want a", k, err)
	}
	l := leaseNow(t, s, tokens(599)) // the rest: a plain acquisition spent 1
	l.Release()
	queued := leaseLater(context.Background(), s, tokens(500))
	untilWaiters(t, s, 1)
	untilArmed(t, clock, 1)
	if _, err := s.AcquireByAffinity(id); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("AcquireByAffinity past a queued waiter: %v", err)
	}
	clock.Advance(50 * time.Second) // 500
	if err := <-queued; err != nil {
		t.Fatal(err)
	}
}

func TestCancelledOldestWaiterLetsTheNextBeServed(t *testing.T) {
	clock := fakeclock.New()
	// Two shards, one key each: a spent, b with 50 tokens, so that only
	// the other shard than a's covers the second waiter.
	s := newKeyPool(t, clock, config.Shared, 2, &apiKey{ID: "a", TPM: 600}, &apiKey{ID: "b", TPM: 100})
	for _, c := range []int64{600, 50} {
		l := leaseNow(t, s, tokens(c))
		l.Release()
	}
	wantRemaining(t, s, "a", map[string]int64{"tokens": 0})
	ctx, cancel := context.WithCancel(context.Background())
	big := leaseLater(ctx, s, tokens(600))
	untilWaiters(t, s, 1)
	untilArmed(t, clock, 1)
	small := leaseLater(context.Background(), s, tokens(10))
	untilWaiters(t, s, 2)
	cancel()
	wantErr(t, "cancelled big", <-big, context.Canceled)
	clock.Advance(0) // the kick runs on the timer
	if err := <-small; err != nil {
		t.Fatal(err)
	}
}

// The wake a departed waiter armed does not delay the next one: a waiter
// whose cost is covered sooner is served at its own refill.
func TestTheNextWaiterIsServedAtItsOwnRefillNotTheDepartedOnes(t *testing.T) {
	clock := fakeclock.New()
	s := newKeyPool(t, clock, config.Shared, 1, &apiKey{ID: "a", TPM: 600}) // 10 tokens a second
	l := leaseNow(t, s, tokens(599))                                        // 1 left: a stays active
	l.Release()
	ctx, cancel := context.WithCancel(context.Background())
	big := leaseLater(ctx, s, tokens(600)) // covered in 59.9 s
	untilWaiters(t, s, 1)
	untilArmed(t, clock, 1)
	small := leaseLater(context.Background(), s, tokens(10)) // covered in 0.9 s
	untilWaiters(t, s, 2)
	cancel()
	wantErr(t, "cancelled big", <-big, context.Canceled)
	clock.Advance(0) // the kick runs on the timer
	clock.Advance(time.Second)
	untilWaiters(t, s, 0)
	if err := <-small; err != nil {
		t.Fatal(err)
	}
}

func TestACostUnderGlobalOrderTakesACoveringResource(t *testing.T) {
	s := newKeyPoolWith(t, config.Config[*apiKey, string]{HeapCount: 4, Ordering: config.GlobalOrder, Clock: fakeclock.New()},
		&apiKey{ID: "a", TPM: 100}, &apiKey{ID: "b", Priority: 1, TPM: 100},
		&apiKey{ID: "c", Priority: 2, TPM: 100}, &apiKey{ID: "d", Priority: 3, TPM: 1000})
	l, err := s.Lease(context.Background(), tokens(500))
	if err != nil || l.Key() != "d" {
		t.Fatalf("Lease = %q, %v; want d, the only key with 500 tokens", l.Key(), err)
	}
	l.Release()
	if l, err = s.Lease(context.Background(), tokens(50)); err != nil || l.Key() != "a" {
		t.Fatalf("Lease = %q, %v; want a, the best", l.Key(), err)
	}
	l.Release()
	mustKeyInvariants(t, s)
}

// Among equally good resources that cover a cost, the one of the
// strategy's shard wins, as it does for a plain acquisition.
func TestACostUnderGlobalOrderBreaksTiesAtTheStrategysShard(t *testing.T) {
	for start, want := range []string{"a", "b", "c", "d"} {
		cfg := config.Config[*apiKey, string]{HeapCount: 4, Ordering: config.GlobalOrder, AcquireStrategy: fixedStrategy(start), Clock: fakeclock.New()}
		s := newKeyPoolWith(t, cfg, &apiKey{ID: "a", TPM: 100}, &apiKey{ID: "b", TPM: 100},
			&apiKey{ID: "c", TPM: 100}, &apiKey{ID: "d", TPM: 100}) // one per shard
		l, err := s.Lease(context.Background(), tokens(50))
		if err != nil || l.Key() != want {
			t.Fatalf("strategy picks shard %d: Lease = %q, %v; want %s", start, l.Key(), err, want)
		}
		l.Release()
	}
}

// An identifier whose resource cannot cover a cost goes to the next one
// in its order that can.
func TestACostPassesOverTheAffinityResourceThatCannotCoverIt(t *testing.T) {
	s := newKeyPool(t, fakeclock.New(), config.Shared, 2, &apiKey{ID: "a", TPM: 100}, &apiKey{ID: "b", TPM: 100_000})
	for i := range 20 {
		id := acquire.StringIdentifier(fmt.Sprint("user-", i))
		l, err := s.LeaseByAffinity(context.Background(), id, tokens(200))
		if err != nil || l.Key() != "b" {
			t.Fatalf("LeaseByAffinity(%s) of 200 tokens = %q, %v; want b, the only key that has them", id, l.Key(), err)
		}
		l.Release()
	}
}

func mustKeyInvariants(t *testing.T, s *scheduler.Scheduler[*apiKey, string]) {
	t.Helper()
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func TestARefundDoesNotCutACooldownShort(t *testing.T) {
	clock := fakeclock.New()
	s := newKeyPool(t, clock, config.Shared, 1, &apiKey{ID: "a", TPM: 600})
	first, _ := s.Lease(context.Background(), tokens(10))
	second, _ := s.Lease(context.Background(), tokens(10))
	if err := first.Cooldown(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	// A debt that takes longer than the cooldown to repay, then a
	// refund that repays it: the cooldown still runs.
	if err := second.Settle(config.Cost{"tokens": 1000}); err != nil {
		t.Fatal(err)
	}
	if err := second.Settle(config.Cost{"tokens": 10}); err != nil {
		t.Fatal(err)
	}
	second.Release()
	if got := s.StateOf("a"); got != "resting" {
		t.Fatalf("a during its cooldown is %s", got)
	}
	clock.Advance(10 * time.Second)
	if got := s.StateOf("a"); got != "active" {
		t.Fatalf("a after its cooldown is %s", got)
	}
}

func TestTheEndOfACooldownHandsOverToABudgetRest(t *testing.T) {
	clock := fakeclock.New()
	s := newKeyPool(t, clock, config.Shared, 1, &apiKey{ID: "a", TPM: 600})
	first, _ := s.Lease(context.Background(), tokens(10))
	second, _ := s.Lease(context.Background(), tokens(10))
	if err := first.Cooldown(time.Second); err != nil {
		t.Fatal(err)
	}
	// 580 left, then 1170 more: 590 of debt, repaid with a unit more
	// 59.1 s from now.
	if err := second.Settle(config.Cost{"tokens": 1180}); err != nil {
		t.Fatal(err)
	}
	second.Release()
	clock.Advance(time.Second)
	if got := s.StateOf("a"); got != "resting" {
		t.Fatalf("a in debt after its cooldown is %s", got)
	}
	clock.Advance(58100*time.Millisecond - 1)
	if got := s.StateOf("a"); got != "resting" {
		t.Fatalf("a 1 ns before it has a unit is %s", got)
	}
	clock.Advance(1)
	if got := s.StateOf("a"); got != "active" {
		t.Fatalf("a repaid is %s", got)
	}
}

func TestEqualResourcesGoByTheBudgetTheyHaveLeft(t *testing.T) {
	clock := fakeclock.New()
	s := newKeyPool(t, clock, config.Shared, 1,
		&apiKey{ID: "a", TPM: 1000}, &apiKey{ID: "b", TPM: 1000}, &apiKey{ID: "c", TPM: 1000})
	spent := map[string]int64{}
	// Calls of varied cost, never released early: each goes to the key
	// with the most budget left, so none runs dry while another is full.
	for _, c := range []int64{300, 100, 200, 50, 250, 120} {
		l := leaseNow(t, s, tokens(c))
		for id, left := range map[string]int64{"a": 1000 - spent["a"], "b": 1000 - spent["b"], "c": 1000 - spent["c"]} {
			if left > 1000-spent[l.Key()] {
				t.Fatalf("a cost of %d went to %s with %d left, while %s had %d", c, l.Key(), 1000-spent[l.Key()], id, left)
			}
		}
		spent[l.Key()] += c
		l.Release()
	}
	wantRemaining(t, s, "a", map[string]int64{"tokens": 1000 - spent["a"]})
	// A refill brings every key back to full: all tie again.
	clock.Advance(time.Minute)
	for _, id := range []string{"a", "b", "c"} {
		wantRemaining(t, s, id, map[string]int64{"tokens": 1000})
	}
}

func TestTheNextWaiterIsServedFromAnotherShardOnceTheOldestIsServed(t *testing.T) {
	clock := fakeclock.New()
	// Two shards, one key each: a holds 1000 tokens, b only 100.
	s := newKeyPool(t, clock, config.Shared, 2, &apiKey{ID: "a", TPM: 1000}, &apiKey{ID: "b", TPM: 100})
	for _, c := range []int64{1000, 50} {
		l := leaseNow(t, s, tokens(c))
		l.Release()
	}
	wantRemaining(t, s, "a", map[string]int64{"tokens": 0})
	wantRemaining(t, s, "b", map[string]int64{"tokens": 50})
	// Only a can ever cover 800; b covers 20 now, but that call waits
	// behind the first.
	big := leaseKeyLater(s, 800)
	untilWaiters(t, s, 1)
	untilArmed(t, clock, 1)
	small := leaseKeyLater(s, 20)
	untilWaiters(t, s, 2)
	clock.Advance(48 * time.Second) // a refills to 800
	if got := <-big; got != "a" {
		t.Fatalf("the 800 went to %s", got)
	}
	clock.Advance(0) // the giver on a's shard kicked b's
	if got := <-small; got != "b" {
		t.Fatalf("the 20 went to %s", got)
	}
}

// Under GlobalOrder a batch serves its waiters across the shards it went
// into; the one it leaves waiting may be covered by another shard.
func TestABatchThatServesTheOldestWaiterLetsAnotherShardServeTheNext(t *testing.T) {
	clock := fakeclock.New()
	// Two shards, one key each: a spent, b with 50 tokens.
	s := newKeyPoolWith(t, config.Config[*apiKey, string]{HeapCount: 2, AcquirePolicy: config.Shared, Ordering: config.GlobalOrder, Clock: clock},
		&apiKey{ID: "a", TPM: 1000}, &apiKey{ID: "b", TPM: 100})
	for _, c := range []int64{1000, 50} {
		l := leaseNow(t, s, tokens(c))
		l.Release()
	}
	big := leaseKeyLater(s, 800)
	untilWaiters(t, s, 1)
	untilArmed(t, clock, 1)
	small := leaseKeyLater(s, 20) // b covers it, but it waits behind the first
	untilWaiters(t, s, 2)
	// c goes to a's shard (keys are dealt round robin) and covers the 800
	// with nothing left for the 20.
	if err := s.BatchAdd([]*apiKey{{ID: "c", TPM: 800}}); err != nil {
		t.Fatal(err)
	}
	if got := <-big; got != "c" {
		t.Fatalf("the 800 went to %s", got)
	}
	clock.Advance(0) // the batch kicked b's shard
	if got := <-small; got != "b" {
		t.Fatalf("the 20 went to %s", got)
	}
}

func TestAnOlderLeaseDoesNotSettleABucketAddedAfterIt(t *testing.T) {
	s := newKeyPool(t, fakeclock.New(), config.Shared, 1, &apiKey{ID: "a", RPM: 10})
	old, err := s.Lease(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The tokens limit arrives while old is out: old did not pay into it.
	if err := s.Update(&apiKey{ID: "a", RPM: 10, TPM: 1000}); err != nil {
		t.Fatal(err)
	}
	if err := old.Settle(config.Cost{"tokens": 700, "requests": 1}); err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, s, "a", map[string]int64{"requests": 9, "tokens": 1000})
	young, _ := s.Lease(context.Background(), tokens(100))
	if err := young.Settle(config.Cost{"tokens": 300}); err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, s, "a", map[string]int64{"requests": 8, "tokens": 700})
	old.Release()
	young.Release()
}

// Concurrent leases with costs, settlements at or below the estimate,
// releases, cooldowns and updates of the limits: no bucket ever goes
// below zero (only a settlement above its estimate may), and the state
// model holds throughout. The clock is real, and only what cannot depend
// on it is asserted.
func TestConcurrentLeasesNeverOverdrawABucket(t *testing.T) {
	keys := []*apiKey{{ID: "a", RPM: 600, TPM: 6000}, {ID: "b", RPM: 600, TPM: 3000}, {ID: "c", TPM: 6000}}
	s := newKeyPool(t, config.SystemClock{}, config.Exclusive, 2, keys...)
	const workers, calls = 8, 150
	done := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := range calls {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
				estimate := int64(1 + (w*31+i*17)%60)
				l, err := s.Lease(ctx, tokens(estimate))
				cancel()
				if err != nil {
					if !errors.Is(err, context.DeadlineExceeded) {
						done <- err
						return
					}
					continue
				}
				if err := l.Settle(config.Cost{"tokens": estimate / 2}); err != nil {
					done <- err
					return
				}
				if i%7 == 0 {
					err = l.Cooldown(time.Millisecond)
				} else {
					err = l.Release()
				}
				if err != nil {
					done <- err
					return
				}
				if w == 0 && i%10 == 0 {
					k := *keys[i%3]
					k.TPM = 2000 + int64(i)*10
					if err := s.Update(&k); err != nil {
						done <- err
						return
					}
				}
			}
			done <- nil
		}()
	}
	for range workers {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			left, err := s.Remaining(k.ID)
			if err != nil {
				t.Fatal(err)
			}
			for name, n := range left {
				if n < 0 {
					t.Fatalf("%s's %s bucket is at %d: overdrawn by estimates", k.ID, name, n)
				}
			}
		}
		mustKeyInvariants(t, s)
	}
}

// A Lease is a value, and copies of it are one lease: what one copy
// settled, another must not settle again from the estimate.
func TestSettleThroughACopyCorrectsWhatTheOtherCopySettled(t *testing.T) {
	s := newKeyPool(t, fakeclock.New(), config.Shared, 1, &apiKey{ID: "a", TPM: 1000})
	l := leaseNow(t, s, tokens(500))
	c := l
	if err := l.Settle(config.Cost{"tokens": 100}); err != nil {
		t.Fatal(err)
	}
	if err := c.Settle(config.Cost{"tokens": 100}); err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, s, "a", map[string]int64{"tokens": 900})
	if err := c.Settle(config.Cost{"tokens": 300}); err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, s, "a", map[string]int64{"tokens": 700})
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// OpenAI's documented sample: 149,984 of 150,000 tokens left, reset in
// 6m0s. A reset longer than the bucket's Per describes another window
// than this bucket's; the remaining count still applies.
func TestObserveWithAResetLongerThanPerKeepsOnlyTheRemaining(t *testing.T) {
	s := newKeyPool(t, fakeclock.New(), config.Shared, 1, &apiKey{ID: "a", TPM: 150_000})
	l := leaseNow(t, s, tokens(10))
	if err := l.Observe("tokens", 149_984, 6*time.Minute); err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, s, "a", map[string]int64{"tokens": 149_984})
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// A reset of exactly the bucket's Per is still this bucket's window: to
// be full when the provider is, the bucket must start from empty, whatever
// remaining says.
func TestObserveWithAResetOfExactlyPerEmptiesTheBucket(t *testing.T) {
	clock := fakeclock.New()
	s := newKeyPool(t, clock, config.Shared, 1, &apiKey{ID: "a", TPM: 1000})
	l := leaseNow(t, s, tokens(10))
	if err := l.Observe("tokens", 500, time.Minute); err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, s, "a", map[string]int64{"tokens": 0})
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(30 * time.Second)
	wantRemaining(t, s, "a", map[string]int64{"tokens": 500})
}

func TestBudgetsReportsEveryBudgetOfThePoolAsRemainingDoes(t *testing.T) {
	s := newKeyPool(t, fakeclock.New(), config.Exclusive, 4,
		&apiKey{ID: "d", Priority: -1, RPM: 5},
		&apiKey{ID: "a", RPM: 10, TPM: 1000}, &apiKey{ID: "b", Priority: 1, TPM: 500},
		&apiKey{ID: "c", Priority: 2}, // no limits: not reported
		&apiKey{ID: "e", Priority: 3, RPM: 5})
	d, err := s.Lease(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(d.Key()); err != nil { // draining: left out
		t.Fatal(err)
	}
	l := leaseNow(t, s, tokens(300))
	if err := l.Settle(config.Cost{"tokens": 1200}); err != nil { // a in debt
		t.Fatal(err)
	}
	if err := s.Remove("e"); err != nil {
		t.Fatal(err)
	}
	got := map[string]scheduler.Budget{}
	s.Budgets(func(id string, b scheduler.Budget) bool {
		// yield runs with no lock held: it may call the scheduler.
		rem, err := s.Remaining(id)
		if err != nil {
			t.Fatalf("Remaining(%s) from inside Budgets: %v", id, err)
		}
		if rem[b.Limit] != b.Remaining {
			t.Errorf("%s %s: Budgets says %d left, Remaining %d", id, b.Limit, b.Remaining, rem[b.Limit])
		}
		got[id+" "+b.Limit] = b
		return true
	})
	want := map[string]scheduler.Budget{
		"a requests": {Limit: "requests", Max: 10, Remaining: 9},
		"a tokens":   {Limit: "tokens", Max: 1000, Remaining: -200},
		"b tokens":   {Limit: "tokens", Max: 500, Remaining: 500},
	}
	if len(got) != len(want) {
		t.Fatalf("Budgets reported %v, want %v", got, want)
	}
	for k, b := range want {
		if got[k] != b {
			t.Errorf("Budgets reported %s as %+v, want %+v", k, got[k], b)
		}
	}
	n := 0
	s.Budgets(func(string, scheduler.Budget) bool {
		n++
		return false
	})
	if n != 1 {
		t.Fatalf("Budgets went on after yield returned false: %d calls", n)
	}
	l.Release()
	d.Release()
}

// An Add and a Remove of the same key racing must never make a cost seem
// to exceed every resource's limits: the profiles counted a resource only
// after it became visible, so a Remove in between left a negative count,
// and a Lease then failed with ErrCostExceedsLimits on a pool whose every
// resource fits its cost (found by verify's budget histories).
func TestAddRacingRemoveNeverMakesACostExceedTheLimits(t *testing.T) {
	s := newKeyPool(t, fakeclock.New(), config.Shared, 2)
	ctx, cancel := context.WithCancel(context.Background())
	const rounds = 3000
	var churn, leases sync.WaitGroup
	churn.Add(2)
	go func() {
		defer churn.Done()
		for range rounds {
			_ = s.Add(&apiKey{ID: "k", TPM: 1000})
		}
	}()
	go func() {
		defer churn.Done()
		for range rounds {
			_ = s.Remove("k")
		}
	}()
	// Leases wait for k and are served by an Add, which then yields.
	for range 2 {
		leases.Add(1)
		go func() {
			defer leases.Done()
			for ctx.Err() == nil {
				l, err := s.Lease(ctx, tokens(10))
				if errors.Is(err, crserrors.ErrCostExceedsLimits) {
					t.Error("a cost of 10 tokens exceeded the limits of a pool of 1000-token keys")
					return
				}
				if err == nil {
					l.Release() // so that k does not drain for good
				}
			}
		}()
	}
	churn.Wait()
	cancel()
	leases.Wait()
}
