package redispool

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

// The oldest waiter's cost is more than any free slot covers, so the
// waiter behind it waits for it alone (the queue is strict FIFO). When
// the oldest leaves the queue, the next gets the free slot that covers
// its own cost at once, not at its next re-check (an hour here).
func TestTheWaiterBehindOneThatLeavesGetsTheFreeSlot(t *testing.T) {
	cases := []struct {
		name string
		// leave makes the oldest waiter leave the queue; its Acquire
		// must then return an error that want accepts.
		leave func(t *testing.T, p *Pool, cancel context.CancelFunc)
		want  error
	}{
		{"its context ends", func(t *testing.T, p *Pool, cancel context.CancelFunc) { cancel() }, context.Canceled},
		{"Sync lowers the limits below its cost", func(t *testing.T, p *Pool, cancel context.CancelFunc) {
			lowered := []Resource{{ID: "a", Capacity: 2, Limits: []config.Limit{tokens(40)}}}
			if err := p.Sync(context.Background(), lowered); err != nil {
				t.Fatal(err)
			}
		}, crserrors.ErrCostExceedsLimits},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t)
			// The oldest re-checks often, so that it learns of the new
			// limits; the one behind never does by itself.
			p := newPool(t, c, Options{RecheckInterval: 20 * time.Millisecond})
			other := newPool(t, newClient(t), Options{Name: p.name, RecheckInterval: time.Hour})
			add(t, p, Resource{ID: "a", Capacity: 2, Limits: []config.Limit{tokens(100)}})
			if _, err := tryCost(t, p, config.Cost{"tokens": 90}); err != nil {
				t.Fatal(err)
			}
			startHub(t, p)
			startHub(t, other)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
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
			tc.leave(t, p, cancel)
			if err := <-first; !errors.Is(err, tc.want) {
				t.Fatalf("the oldest waiter: %v, want %v", err, tc.want)
			}
			// Served now, or never within acquireAsync's 30 s: it would
			// not re-check for an hour.
			r := <-second
			if r.err != nil {
				t.Fatalf("the waiter behind, beside a free slot once the oldest left: %v", r.err)
			}
			mustRelease(t, r.lease)
			checkInvariants(t, c, p)
		})
	}
}
