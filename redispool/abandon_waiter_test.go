package redispool

import (
	"context"
	"testing"
	"time"

	"github.com/crsched/crs/config"
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
