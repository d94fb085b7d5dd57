package redispool

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

// When the oldest waiter, whose cost no free slot covers, leaves, the
// waiter behind it gets the free slot that covers its own at once, not
// at its next re-check.
func TestAWaiterBehindOneThatLeavesGetsTheFreeSlot(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{RecheckInterval: time.Hour})
	other := newPool(t, newClient(t), Options{Name: p.name, RecheckInterval: time.Hour})
	add(t, p, Resource{ID: "a", Capacity: 2, Limits: []config.Limit{tokens(100)}})
	if _, err := tryCost(t, p, config.Cost{"tokens": 90}); err != nil {
		t.Fatal(err)
	}
	startHub(t, p)
	startHub(t, other)
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := p.Acquire(ctx, WithCost(config.Cost{"tokens": 50}))
		first <- err
	}()
	for stats(t, p).Queued < 1 {
		time.Sleep(time.Millisecond)
	}
	second := acquireAsync(other)
	for stats(t, p).Queued < 2 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-first
	for stats(t, p).Queued > 1 {
		time.Sleep(time.Millisecond)
	}
	select {
	case r := <-second:
		if r.err != nil {
			t.Fatalf("the second waiter: %v", r.err)
		}
		mustRelease(t, r.lease)
	case <-time.After(5 * time.Second):
		t.Errorf("the second waiter still waits 5 s after the one before it left, beside a free slot")
	}
	checkInvariants(t, c, p)
}

// When Sync lowers the limits below the oldest waiter's cost, that
// waiter's next re-check gives up with ErrCostExceedsLimits; the waiter
// behind it, which waited for it alone, gets the free slot then, not at
// its own next re-check.
func TestAWaiterBehindOneWhoseCostNoLimitCoversGetsTheFreeSlot(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{RecheckInterval: 20 * time.Millisecond})
	other := newPool(t, newClient(t), Options{Name: p.name, RecheckInterval: time.Hour})
	add(t, p, Resource{ID: "a", Capacity: 2, Limits: []config.Limit{tokens(100)}})
	if _, err := tryCost(t, p, config.Cost{"tokens": 90}); err != nil {
		t.Fatal(err)
	}
	startHub(t, p)
	startHub(t, other)
	first := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := p.Acquire(ctx, WithCost(config.Cost{"tokens": 50}))
		first <- err
	}()
	for stats(t, p).Queued < 1 {
		time.Sleep(time.Millisecond)
	}
	second := acquireAsync(other)
	for stats(t, p).Queued < 2 {
		time.Sleep(time.Millisecond)
	}
	if err := p.Sync(context.Background(), []Resource{{ID: "a", Capacity: 2, Limits: []config.Limit{tokens(40)}}}); err != nil {
		t.Fatal(err)
	}
	if err := <-first; !errors.Is(err, crserrors.ErrCostExceedsLimits) {
		t.Fatalf("the first waiter, its cost above every limit: %v, want ErrCostExceedsLimits", err)
	}
	select {
	case r := <-second:
		if r.err != nil {
			t.Fatalf("the second waiter: %v", r.err)
		}
		mustRelease(t, r.lease)
	case <-time.After(5 * time.Second):
		t.Errorf("the second waiter still waits 5 s after the one before it gave up, beside a free slot")
	}
	checkInvariants(t, c, p)
}
