package redispool

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/crsched/crs/config"
)

// A tenant's budget is kept exactly across processes: however many
// handles race for it, its grants add up to the bucket's Max, not one
// more (the refill over the run is well under a unit).
func TestHandlesRacingForATenantsBudgetGetExactlyItsMax(t *testing.T) {
	c := newClient(t)
	name := poolName(t)
	handles := []*Pool{
		newPool(t, c, Options{Name: name}),
		newPool(t, newClient(t), Options{Name: name}),
		newPool(t, newClient(t), Options{Name: name}),
	}
	const max = 150
	add(t, handles[0], Resource{ID: "a", Capacity: 1000}, Resource{ID: "b", Capacity: 1000})
	budget := []config.Limit{{Name: "tokens", Max: max, Per: time.Hour}}
	if err := handles[1].SyncTenants(context.Background(), []Tenant{{Name: "t", Limits: budget}}); err != nil {
		t.Fatal(err)
	}
	granted := drainConcurrently(t, handles, func(g int, cost int64) []AcquireOption {
		return []AcquireOption{WithTenant("t"), WithPriority(g % 2), WithCost(config.Cost{"tokens": cost})}
	})
	if granted != max {
		t.Fatalf("granted %d tokens of the tenant's %d", granted, max)
	}
	checkInvariants(t, c, handles[0])
	checkFair(t, handles[0])
}

// Waiters of many tenants and priorities, from three handles, some
// giving up, some settling, while the tenants change: every lease ends,
// no waiter is left behind, and the records agree with the queue.
func TestConcurrentTenantsLeaveConsistentRecords(t *testing.T) {
	c := newClient(t)
	name := poolName(t)
	handles := []*Pool{
		newPool(t, c, Options{Name: name, ShareBy: "tokens"}),
		newPool(t, newClient(t), Options{Name: name, ShareBy: "tokens", RecheckInterval: 10 * time.Millisecond}),
		newPool(t, newClient(t), Options{Name: name, ShareBy: "tokens"}),
	}
	ctx := context.Background()
	add(t, handles[0], Resource{ID: "a", Capacity: 2, Limits: []config.Limit{{Name: "tokens", Max: 500, Per: 100 * time.Millisecond}}},
		Resource{ID: "b"})
	tenants := func(rng *rand.Rand) []Tenant {
		return []Tenant{
			{Name: "x", Weight: int64(1 + rng.IntN(3))},
			{Name: "y", Limits: []config.Limit{{Name: "tokens", Max: int64(20 + rng.IntN(100)), Per: 50 * time.Millisecond}}},
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for g := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 44))
			p := handles[g%len(handles)]
			for range 40 {
				if rng.IntN(10) == 0 {
					if err := p.SyncTenants(ctx, tenants(rng)); err != nil {
						errs <- err
						return
					}
					continue
				}
				tenant := []string{"", "x", "y"}[rng.IntN(3)]
				opts := []AcquireOption{WithTenant(tenant), WithPriority(rng.IntN(3)), WithCost(config.Cost{"tokens": int64(1 + rng.IntN(20))})}
				if tenant == "" && rng.IntN(2) == 0 {
					opts = []AcquireOption{WithCost(config.Cost{"tokens": int64(1 + rng.IntN(20))})} // no class
				}
				wctx, cancel := context.WithTimeout(ctx, time.Duration(1+rng.IntN(30))*time.Millisecond)
				l, err := p.Acquire(wctx, opts...)
				ended := wctx.Err() != nil // its deadline, whatever the error says (a read's timeout)
				cancel()
				if err != nil {
					if !expected(err) && !ended {
						errs <- fmt.Errorf("Acquire(%s): %w", tenant, err)
						return
					}
					continue
				}
				if rng.IntN(2) == 0 {
					if err := l.Settle(ctx, config.Cost{"tokens": int64(rng.IntN(20))}); err != nil {
						errs <- err
						return
					}
				}
				if err := l.Release(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, p := range handles {
		p.bg.Wait() // the give-ups
	}
	s := stats(t, handles[0])
	if s.Leases != 0 || s.Queued != 0 {
		t.Fatalf("after every call ended: %+v", s)
	}
	checkInvariants(t, c, handles[0])
	checkFair(t, handles[0])
}
