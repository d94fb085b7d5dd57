package scheduler_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/scheduler"
)

// BenchmarkGrantWithTenantsWaiting times one grant of one exclusive
// resource passed among callers of n tenants, one caller each, every
// one waiting whenever it does not hold it: the order of service chooses
// among n classes at every grant, in a heap, so 10,000 tenants waiting
// cost little more than 10. With fifo=true the callers name no tenant:
// one class, first come, first served, which sets apart what n waiting
// goroutines cost from what n tenants do.
func BenchmarkGrantWithTenantsWaiting(b *testing.B) {
	for _, c := range []struct {
		n    int
		fifo bool
	}{{10, false}, {10000, false}, {10, true}, {10000, true}} {
		n := c.n
		b.Run(fmt.Sprintf("tenants=%d/fifo=%v", n, c.fifo), func(b *testing.B) {
			s := newScheduler(b, baseConfig(1, config.Exclusive))
			addAll(b, s, w("k", 0))
			ctx, cancel := context.WithCancel(context.Background())
			held, _ := s.Lease(ctx)
			var grants atomic.Int64
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					opts := []scheduler.LeaseOption{scheduler.WithTenant(fmt.Sprint(i))}
					if c.fifo {
						opts = nil
					}
					for ctx.Err() == nil {
						l, err := s.Lease(ctx, opts...)
						if err != nil {
							return
						}
						if grants.Add(1) == int64(b.N) {
							cancel()
						}
						_ = l.Release()
					}
				}()
			}
			for s.Stats().Waiters < n {
				runtime.Gosched()
			}
			b.ResetTimer()
			_ = held.Release()
			wg.Wait()
			b.StopTimer()
			cancel()
		})
	}
}
