package redispool

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

// Odd IDs: ':' '+' ' ' a leading 'q', a leading digit and '#'.
var oddIDs = []string{"a:b:c", "q 1 2 p", "+1:2", "12:34", "#h", "x y", ":", "q", "r:#"}

func TestEveryLeasePathTakesIDsWithSeparators(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	for _, id := range oddIDs {
		t.Run(id, func(t *testing.T) {
			p := newPool(t, c, Options{LeaseTTL: time.Hour})
			add(t, p, Resource{ID: id, Limits: []config.Limit{tokens(100)}})
			// release
			l, err := p.TryAcquire(ctx, WithCost(config.Cost{"tokens": 10}))
			if err != nil || l.ID != id {
				t.Fatalf("acquire: %v %v", l, err)
			}
			checkInvariants(t, c, p)
			if err := l.Extend(ctx, time.Hour); err != nil {
				t.Fatal(err)
			}
			if err := l.Settle(ctx, config.Cost{"tokens": 3}); err != nil {
				t.Fatal(err)
			}
			if err := l.Settle(ctx, config.Cost{"tokens": 4}); err != nil {
				t.Fatal(err)
			}
			if err := l.Observe(ctx, "tokens", 90, time.Hour); err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, c, p)
			mustRelease(t, l)
			checkInvariants(t, c, p)
			rem, err := p.Remaining(ctx, id)
			if err != nil || rem["tokens"] != 90 {
				t.Fatalf("remaining %v %v", rem, err)
			}
			// cooldown, fail
			l = mustAcquire(t, p)
			if err := l.Cooldown(ctx, time.Millisecond); err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, c, p)
			time.Sleep(5 * time.Millisecond)
			l = mustAcquire(t, p)
			if err := l.Fail(ctx); err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, c, p)
			// hand to a waiter
			held := mustAcquire(t, p)
			got := make(chan *Lease, 1)
			go func() {
				l, err := p.Acquire(ctx)
				if err != nil {
					t.Error(err)
				}
				got <- l
			}()
			for stats(t, p).Queued == 0 {
				time.Sleep(time.Millisecond)
			}
			mustRelease(t, held)
			w := <-got
			if w == nil || w.ID != id {
				t.Fatalf("waiter got %v", w)
			}
			checkInvariants(t, c, p)
			if err := w.Settle(ctx, config.Cost{"tokens": 1}); err != nil {
				t.Fatal(err)
			}
			if err := w.Extend(ctx, time.Hour); err != nil {
				t.Fatal(err)
			}
			// drain: remove while leased, then release
			if err := p.Remove(ctx, id); err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, c, p)
			if err := w.Settle(ctx, config.Cost{"tokens": 1}); err != nil {
				t.Fatal(err)
			}
			mustRelease(t, w)
			checkInvariants(t, c, p)
			if keys := poolKeys(t, c, p); len(keys) != 0 {
				t.Fatalf("keys left: %v", keys)
			}
			if err := w.Settle(ctx, config.Cost{"tokens": 1}); !errors.Is(err, crserrors.ErrLeaseExpired) && !errors.Is(err, crserrors.ErrLeaseReleased) {
				t.Fatalf("settle after release: %v", err)
			}
		})
	}
}
