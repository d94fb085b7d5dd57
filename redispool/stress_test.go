package redispool

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	crserrors "github.com/crsched/crs/errors"
)

// expected reports whether err is one of the refusals that concurrent
// operations on the same resources legitimately meet.
func expected(err error) bool {
	for _, e := range []error{
		crserrors.ErrResourceNotFound, crserrors.ErrDuplicateKey, crserrors.ErrResourceNotActive,
		crserrors.ErrResourceNotExcluded, crserrors.ErrResourceNotInactive, crserrors.ErrNoResourceAvailable,
		crserrors.ErrLeaseExpired,
		context.DeadlineExceeded,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	return err == nil
}

func TestConcurrentOperationsFromManyClientsKeepThePoolConsistent(t *testing.T) {
	c := newClient(t)
	name := poolName(t)
	// Three handles on separate connections, with leases short enough to
	// expire during the run and long ones.
	handles := []*Pool{
		newPool(t, c, Options{Name: name, LeaseTTL: 5 * time.Millisecond}),
		newPool(t, newClient(t), Options{Name: name}),
		newPool(t, newClient(t), Options{Name: name, RecheckInterval: 10 * time.Millisecond}),
	}
	const resources, goroutines, ops = 6, 12, 150
	ids := make([]string, resources)
	for i := range ids {
		ids[i] = fmt.Sprintf("r%d", i)
		add(t, handles[0], Resource{ID: ids[i], Priority: float64(i % 3), Capacity: 1 + i%3})
	}
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			p := handles[g%len(handles)]
			var held []*Lease
			var removed []string // by this goroutine, to add again
			ctx := context.Background()
			for range ops {
				id := ids[rng.IntN(resources)]
				var err error
				switch op := rng.IntN(12); {
				case op < 4:
					var l *Lease
					if op == 0 {
						wctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
						l, err = p.Acquire(wctx)
						cancel()
					} else {
						l, err = p.TryAcquire(ctx)
					}
					if err == nil {
						held = append(held, l)
					}
				case op < 7 && len(held) > 0:
					i := rng.IntN(len(held))
					l := held[i]
					held = append(held[:i], held[i+1:]...)
					switch op {
					case 4:
						err = l.Release(ctx)
					case 5:
						err = l.Cooldown(ctx, time.Duration(1+rng.IntN(5))*time.Millisecond)
					case 6:
						if err = l.Extend(ctx, time.Second); err == nil {
							held = append(held, l)
						}
					}
				case op == 7:
					err = p.Exclude(ctx, id)
				case op == 8:
					err = p.Include(ctx, id)
				case op == 9:
					err = p.Suspend(ctx, id, time.Duration(1+rng.IntN(5))*time.Millisecond)
				case op == 10:
					err = p.Update(ctx, id, float64(rng.IntN(3)))
				case op == 11:
					// Put back at once, or (while it drains) on a later op.
					if err = p.Remove(ctx, id); err == nil {
						removed = append(removed, id)
					}
				}
				if !expected(err) {
					errs <- err
					return
				}
				for i := 0; i < len(removed); {
					err := p.Add(ctx, Resource{ID: removed[i], Priority: 1, Capacity: 2})
					if err == nil || (errors.Is(err, crserrors.ErrDuplicateKey) && !errors.Is(err, crserrors.ErrResourceDraining)) {
						removed = append(removed[:i], removed[i+1:]...)
						continue
					}
					i++
				}
				if !expected(err) {
					errs <- err
					return
				}
			}
			for _, l := range held {
				if err := l.Release(ctx); !expected(err) {
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
	checkInvariants(t, c, handles[0])
	// What is still removed can be added now that every lease has ended
	// (those past their deadline end with this call).
	for _, id := range ids {
		if err := handles[0].Add(context.Background(), Resource{ID: id}); err != nil && !errors.Is(err, crserrors.ErrDuplicateKey) {
			t.Fatalf("Add(%s) after the run: %v", id, err)
		}
	}
	checkInvariants(t, c, handles[0])
	s := stats(t, handles[0])
	if s.Leases != 0 || s.Held != 0 || s.Draining != 0 || s.Resources != resources ||
		s.Available != resources-s.Excluded-s.Suspended {
		t.Fatalf("after every lease ended: %+v", s)
	}
	t.Logf("after the run: %+v", s)
}
