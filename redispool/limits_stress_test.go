package redispool

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

// overdrawn lists the buckets of the pool below zero. Settling never
// above the estimate, nothing else may take a bucket below zero: not a
// grant, a hand-over, an expiry, a Sync that changes the limits, Remove,
// Observe.
func overdrawn(s rawState) []string {
	var bad []string
	for id, r := range s.resources {
		for _, b := range r.buckets {
			if b.units < 0 {
				bad = append(bad, fmt.Sprintf("%q bucket %s at %d+%d/%d", id, b.name, b.units, b.rem, b.per))
			}
		}
	}
	return bad
}

func TestConcurrentOperationsNeverOverdrawABucket(t *testing.T) {
	c := newClient(t)
	name := poolName(t)
	eject := config.Ejection{ConsecutiveFailures: 2, BaseTime: 5 * time.Millisecond}
	handles := []*Pool{
		newPool(t, c, Options{Name: name, LeaseTTL: 5 * time.Millisecond, Ejection: eject}),
		newPool(t, newClient(t), Options{Name: name, Ejection: eject}),
		newPool(t, newClient(t), Options{Name: name, RecheckInterval: 10 * time.Millisecond, Ejection: eject}),
	}
	const resources, goroutines, ops = 5, 12, 120
	pool := func(rng *rand.Rand) []Resource {
		rs := make([]Resource, resources)
		for i := range rs {
			rs[i] = Resource{ID: fmt.Sprintf("r%d", i), Priority: float64(i % 2), Capacity: 1 + i%3}
			if i == resources-1 && rng.IntN(2) == 0 {
				continue // a resource without limits, sometimes
			}
			rs[i].Limits = []config.Limit{
				{Name: "tokens", Max: int64(20 + rng.IntN(200)), Per: time.Duration(1+rng.IntN(3)) * time.Second},
				{Name: "requests", Max: int64(2 + rng.IntN(20)), Per: time.Second},
			}
		}
		return rs
	}
	if err := handles[0].Sync(context.Background(), pool(rand.New(rand.NewPCG(0, 0)))); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var checks atomic.Int64
	checked := make(chan []string, 1)
	go func() {
		var bad []string
		for !stop.Load() && len(bad) == 0 {
			bad = overdrawn(readState(t, c, handles[0]))
			checks.Add(1)
		}
		checked <- bad
	}()
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 2))
			p := handles[g%len(handles)]
			held := map[*Lease]int64{} // lease -> tokens estimated
			ctx := context.Background()
			pick := func() *Lease {
				for l := range held {
					return l
				}
				return nil
			}
			for range ops {
				id := fmt.Sprintf("r%d", rng.IntN(resources))
				var err error
				switch op := rng.IntN(14); {
				case op < 4:
					cost := int64(rng.IntN(60))
					var opts []AcquireOption
					if cost > 0 {
						opts = append(opts, WithCost(config.Cost{"tokens": cost}))
					} else {
						cost = 1 // the default
					}
					var l *Lease
					if op == 0 {
						wctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
						l, err = p.Acquire(wctx, opts...)
						cancel()
					} else {
						l, err = p.TryAcquire(ctx, opts...)
					}
					if err == nil {
						held[l] = cost
					}
				case op < 9 && len(held) > 0:
					l := pick()
					switch op {
					case 4:
						delete(held, l)
						err = l.Release(ctx)
					case 5:
						delete(held, l)
						err = l.Cooldown(ctx, time.Duration(1+rng.IntN(5))*time.Millisecond)
					case 6:
						delete(held, l)
						err = l.Fail(ctx)
					case 7:
						if rng.IntN(2) == 0 {
							err = l.Extend(ctx, time.Second)
						} else {
							err = l.Observe(ctx, "tokens", rng.Int64N(100), time.Duration(rng.IntN(3000))*time.Millisecond)
						}
					case 8:
						// Never above the estimate: then no bucket may go
						// below zero.
						spent := rng.Int64N(held[l] + 1)
						if err = l.Settle(ctx, config.Cost{"tokens": spent}); err == nil {
							held[l] = spent
						}
					}
				case op == 9:
					err = p.Sync(ctx, pool(rng))
				case op == 10:
					err = p.Exclude(ctx, id)
				case op == 11:
					err = p.Include(ctx, id)
				case op == 12:
					err = p.Suspend(ctx, id, time.Duration(1+rng.IntN(5))*time.Millisecond)
				case op == 13:
					if err = p.Remove(ctx, id); err == nil {
						err = p.Sync(ctx, pool(rng)) // back, with limits anew
					}
				}
				if !expected(err) && !errors.Is(err, crserrors.ErrCostExceedsLimits) && !errors.Is(err, crserrors.ErrUnknownLimit) {
					errs <- err
					return
				}
			}
			for l := range held {
				if err := l.Release(ctx); !expected(err) {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if bad := <-checked; len(bad) > 0 {
		t.Fatalf("overdrawn: %v", bad)
	}
	if bad := overdrawn(readState(t, c, handles[0])); len(bad) > 0 {
		t.Fatalf("overdrawn after the run: %v", bad)
	}
	checkInvariants(t, c, handles[0])
	s := stats(t, handles[0])
	if s.Leases != 0 || s.Held != 0 || s.Resources != resources {
		t.Fatalf("after every lease ended: %+v", s)
	}
	t.Logf("after the run, %d checks: %+v", checks.Load(), s)
}

// A budget is kept exactly across processes: however many handles race
// for it, the grants add up to the bucket's Max, not one more (the
// refill over the run is well under a unit).
func TestHandlesRacingForABudgetGetExactlyItsMax(t *testing.T) {
	c := newClient(t)
	name := poolName(t)
	handles := []*Pool{
		newPool(t, c, Options{Name: name}),
		newPool(t, newClient(t), Options{Name: name}),
		newPool(t, newClient(t), Options{Name: name}),
	}
	const max = 150
	add(t, handles[0], Resource{ID: "a", Capacity: 1000, Limits: []config.Limit{tokens(max)}},
		Resource{ID: "b", Capacity: 1000, Limits: []config.Limit{tokens(max)}})
	granted := drainConcurrently(t, handles, func(_ int, cost int64) []AcquireOption {
		return []AcquireOption{WithCost(config.Cost{"tokens": cost})}
	})
	left := remaining(t, handles[0], "a")["tokens"] + remaining(t, handles[0], "b")["tokens"]
	if granted+left != 2*max || left < 0 || left > 2 {
		t.Fatalf("granted %d tokens with %d left of %d", granted, left, 2*max)
	}
	checkInvariants(t, c, handles[0])
}

// drainConcurrently has 12 goroutines, spread over handles, take and
// release leases by TryAcquire until none is left, goroutine g with
// opts(g, cost) for a cost of 1 to 3 tokens, and returns the tokens
// granted: what racing handles got of a budget. An error other than
// ErrNoResourceAvailable fails t.
func drainConcurrently(t *testing.T, handles []*Pool, opts func(g int, cost int64) []AcquireOption) int64 {
	t.Helper()
	var granted atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for g := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cost := int64(1 + g%3)
			p, o := handles[g%len(handles)], opts(g, cost)
			for {
				l, err := p.TryAcquire(context.Background(), o...)
				if errors.Is(err, crserrors.ErrNoResourceAvailable) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
				granted.Add(cost)
				if err := l.Release(context.Background()); err != nil {
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
	return granted.Load()
}
