package scheduler_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/scheduler"
)

// Callers of several tenants and priorities, with costs, tenant limits
// and resource limits, some giving up, on shards served concurrently
// while the clock moves, all end served or cancelled, leave the pool
// consistent, and never spend more of a tenant's limit in any window
// than the limit allows.
func TestTenantsUnderConcurrencyStayConsistentAndWithinTheirLimits(t *testing.T) {
	for _, ordering := range []config.Ordering{config.ShardOrder, config.GlobalOrder} {
		t.Run(fmt.Sprint(ordering), func(t *testing.T) {
			clock := fakeclock.New()
			limit := config.Limit{Name: "requests", Max: 5, Per: 100 * time.Millisecond}
			s := newKeyPoolWith(t, config.Config[*apiKey, string]{
				HeapCount: 3, AcquirePolicy: config.Exclusive, Clock: clock, Ordering: ordering, ShareBy: "tokens",
				Tenants: func(name string) config.Tenant {
					if name == "limited" {
						return config.Tenant{Weight: 2, Limits: []config.Limit{limit}}
					}
					return config.Tenant{}
				},
			}, &apiKey{ID: "a", TPM: 600}, &apiKey{ID: "b", TPM: 600, Priority: 1}, &apiKey{ID: "c", TPM: 600, Priority: 2}, &apiKey{ID: "d", TPM: 600})
			var mu sync.Mutex
			var limited []span // when each grant to the limited tenant may have been
			start := clock.Now()
			var wg sync.WaitGroup
			for g := range 12 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(g), 7))
					tenant := []string{"", "limited", "x", "y"}[g%4]
					for range 30 {
						ctx, cancel := context.WithCancel(context.Background())
						if rng.IntN(5) == 0 {
							cancel() // gives up at once if it must wait
						}
						lo := clock.Now().Sub(start)
						l, err := s.Lease(ctx, scheduler.WithTenant(tenant), scheduler.WithPriority(rng.IntN(3)), tokens(1+rng.Int64N(100)))
						cancel()
						if err != nil {
							continue
						}
						if tenant == "limited" {
							mu.Lock()
							limited = append(limited, span{lo, clock.Now().Sub(start)})
							mu.Unlock()
						}
						if rng.IntN(2) == 0 {
							_ = l.Settle(config.Cost{"tokens": rng.Int64N(50)})
						}
						_ = l.Release()
					}
				}()
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			for running := true; running; {
				select {
				case <-done:
					running = false
				default:
					clock.Advance(time.Millisecond)
				}
			}
			if err := s.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
			if st := s.Stats(); st.Waiters != 0 || st.Holders != 0 {
				t.Fatalf("after every caller returned: %d waiters, %d holders", st.Waiters, st.Holders)
			}
			mu.Lock()
			defer mu.Unlock()
			refereeSpans(t, limited, limit)
		})
	}
}

// span is when a grant may have been: the clock moves while a call runs.
type span struct{ lo, hi time.Duration }

// refereeSpans checks every window of grants, each of one unit, against
// l, as refereeWindows, with the window as long as the grants' spans
// allow, so that the check never blames the clock's moves on the
// scheduler.
func refereeSpans(t *testing.T, grants []span, l config.Limit) {
	t.Helper()
	slices.SortFunc(grants, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	for i := range grants {
		end := grants[i].hi
		for j := i; j < len(grants); j++ {
			end = max(end, grants[j].hi)
			d := end - grants[i].lo
			if allowed := float64(l.Max) + float64(l.Max)*float64(d)/float64(l.Per); float64(j-i+1) > allowed {
				t.Fatalf("%d grants within %v: above %v", j-i+1, d, allowed)
			}
		}
	}
}
