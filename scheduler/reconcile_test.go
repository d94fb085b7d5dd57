package scheduler_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/scheduler"
)

func leaseTokens(t *testing.T, s *scheduler.Scheduler[*apiKey, string], n int64) scheduler.Lease[*apiKey, string] {
	t.Helper()
	l, err := s.Lease(context.Background(), scheduler.WithCost(config.Cost{"tokens": n}))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func tokensLeft(t *testing.T, s *scheduler.Scheduler[*apiKey, string]) int64 {
	t.Helper()
	left, err := s.Remaining("a")
	if err != nil {
		t.Fatal(err)
	}
	return left["tokens"]
}

// A provider whose figure predates its refund reports less than it will
// have: the refund is lost at that answer, and the next answer, which
// counts it, gives it back.
func TestAReconcileGivesBackARefundAnEarlierFigureMissed(t *testing.T) {
	s := newKeyPool(t, fakeclock.New(), config.Shared, 1, &apiKey{ID: "a", TPM: 1000})
	a := leaseTokens(t, s, 600)
	// The provider charged 600, reported 400 left, then refunded 500.
	if err := a.Reconcile(config.Cost{"tokens": 100}, map[string]scheduler.Reported{"tokens": {Remaining: 400}}); err != nil {
		t.Fatal(err)
	}
	_ = a.Release()
	if got := tokensLeft(t, s); got != 400 {
		t.Fatalf("after the first answer: %d left, want the provider's 400", got)
	}
	b := leaseTokens(t, s, 300)
	// The provider: 900 after the refund, less b's 300.
	if err := b.Reconcile(config.Cost{"tokens": 300}, map[string]scheduler.Reported{"tokens": {Remaining: 600}}); err != nil {
		t.Fatal(err)
	}
	if got := tokensLeft(t, s); got != 600 {
		t.Fatalf("after the second answer: %d left, want the provider's 600", got)
	}
}

// Two calls out, answered out of order: the first answer's figure
// already counts the other call's overrun, which that call's own
// settlement then takes; it is taken once.
func TestAnOverrunSeenInAnotherAnswerIsTakenOnce(t *testing.T) {
	s := newKeyPool(t, fakeclock.New(), config.Shared, 1, &apiKey{ID: "a", TPM: 1000})
	a, b := leaseTokens(t, s, 100), leaseTokens(t, s, 100)
	// The provider settled a to 300 and b to 100: 600 left after both.
	if err := b.Reconcile(config.Cost{"tokens": 100}, map[string]scheduler.Reported{"tokens": {Remaining: 600}}); err != nil {
		t.Fatal(err)
	}
	_ = b.Release()
	if got := tokensLeft(t, s); got != 600 {
		t.Fatalf("after b's answer: %d left, want 600", got)
	}
	if err := a.Reconcile(config.Cost{"tokens": 300}, map[string]scheduler.Reported{"tokens": {Remaining: 600}}); err != nil {
		t.Fatal(err)
	}
	if got := tokensLeft(t, s); got != 600 {
		t.Fatalf("after a's answer: %d left, want the provider's 600", got)
	}
}

// The raise never counts on what a call still out may spend: a figure
// from before another lease went out cannot make room for more than the
// provider will have once that lease is charged.
func TestAReconcileNeverRaisesPastTheCallsStillOut(t *testing.T) {
	s := newKeyPool(t, fakeclock.New(), config.Shared, 1, &apiKey{ID: "a", TPM: 1000})
	a := leaseTokens(t, s, 100)
	b := leaseTokens(t, s, 700) // not yet received by the provider
	if err := a.Reconcile(config.Cost{"tokens": 100}, map[string]scheduler.Reported{"tokens": {Remaining: 900}}); err != nil {
		t.Fatal(err)
	}
	if got := tokensLeft(t, s); got != 200 {
		t.Fatalf("%d left, want 900 - b's 700", got)
	}
	_ = b.Release()
}

// A limit the provider reports other than the bucket's becomes the
// bucket's: lowered, the level is cut to it; raised, it is reached by
// refilling, or at once when the provider says so.
func TestAReportedLimitRetunesTheBucket(t *testing.T) {
	clock := fakeclock.New()
	s := newKeyPool(t, clock, config.Shared, 1, &apiKey{ID: "a", TPM: 1000})
	a := leaseTokens(t, s, 100)
	if err := a.Reconcile(config.Cost{"tokens": 100}, map[string]scheduler.Reported{"tokens": {Remaining: -1, Limit: 500}}); err != nil {
		t.Fatal(err)
	}
	_ = a.Release()
	var max int64
	s.Budgets(func(_ string, b scheduler.Budget) bool { max = b.Max; return true })
	if got := tokensLeft(t, s); max != 500 || got != 500 {
		t.Fatalf("Max %d, %d left; want 500 and 500", max, got)
	}
	// Half the new Max a minute: 250 in 30 s, at the provider's rate.
	b := leaseTokens(t, s, 500)
	clock.Advance(30 * time.Second)
	if got := tokensLeft(t, s); got != 250 {
		t.Fatalf("%d left after 30 s, want 250", got)
	}
	if err := b.Reconcile(config.Cost{"tokens": 500}, map[string]scheduler.Reported{"tokens": {Remaining: 1750, Limit: 2000}}); err != nil {
		t.Fatal(err)
	}
	if got := tokensLeft(t, s); got != 1750 {
		t.Fatalf("%d left after the provider raised its limit, want its 1750", got)
	}
	_ = b.Release()
	// Above the old Max, within what is left: granted at once (a done
	// context fails a lease that would wait, rather than hang the test).
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Lease(done, scheduler.WithCost(config.Cost{"tokens": 1700})); err != nil {
		t.Fatalf("a cost within the raised limit: %v", err)
	}
}

func TestAReconcileOfBadFiguresChangesNothing(t *testing.T) {
	s := newKeyPool(t, fakeclock.New(), config.Shared, 1, &apiKey{ID: "a", TPM: 1000})
	a := leaseTokens(t, s, 100)
	for _, tc := range []struct {
		r    map[string]scheduler.Reported
		want error
	}{
		{map[string]scheduler.Reported{"tokens": {Remaining: config.MaxUnits + 1}}, crserrors.ErrInvalidCost},
		{map[string]scheduler.Reported{"tokens": {Remaining: 1, Limit: -1}}, crserrors.ErrInvalidCost},
		{map[string]scheduler.Reported{"tokens": {Remaining: 1, Reset: -1}}, crserrors.ErrInvalidDuration},
		{map[string]scheduler.Reported{"tokens": {Remaining: 1}, "images": {Remaining: 1}}, crserrors.ErrUnknownLimit},
	} {
		if err := a.Reconcile(config.Cost{"tokens": 0}, tc.r); !errors.Is(err, tc.want) {
			t.Errorf("%v: %v, want %v", tc.r, err, tc.want)
		}
	}
	if got := tokensLeft(t, s); got != 900 {
		t.Fatalf("%d left, want 900: nothing changed", got)
	}
	_ = a.Release()
	if err := a.Reconcile(nil, nil); !errors.Is(err, crserrors.ErrLeaseReleased) {
		t.Fatalf("after Release: %v", err)
	}
}

// A limit counted at the provider's admission refills, once a grant
// takes it from full, only from the next answer.
func TestALimitCountedAtAdmissionRefillsFromTheAnswer(t *testing.T) {
	clock := fakeclock.New()
	s, err := scheduler.New(config.Config[*apiKey, string]{
		Comparator:    func(a, b *apiKey) int { return 0 },
		KeyFunc:       func(k *apiKey) string { return k.ID },
		AcquirePolicy: config.Shared,
		Clock:         clock,
		Limits: func(*apiKey) []config.Limit {
			return []config.Limit{{Name: "tokens", Max: 600, Per: time.Minute, Admission: true}}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if err := s.Add(&apiKey{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	l := leaseTokens(t, s, 300)
	clock.Advance(10 * time.Second)
	if got := tokensLeft(t, s); got != 300 {
		t.Fatalf("%d left before any answer, want 300: no refill yet", got)
	}
	if err := l.Settle(config.Cost{"tokens": 300}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(10 * time.Second)
	if got := tokensLeft(t, s); got != 400 {
		t.Fatalf("%d left 10 s after the answer, want 400", got)
	}
	_ = l.Release()
}
