package budget

import (
	"sync"
	"testing"
	"time"

	"github.com/crsched/crs/config"
)

// A tenant's budgets have their own lock: steps of different shards take
// from them and give back at once, and not a unit is lost or made.
func TestATenantsBudgetsStayExactUnderConcurrentTakesAndRefunds(t *testing.T) {
	const max, goroutines, rounds = 1000, 8, 500
	tn := NewTenant("a", config.Tenant{Limits: []config.Limit{{Name: "tokens", Max: max, Per: time.Hour}}}, 0)
	cost := config.Cost{"tokens": 3}
	var taken sync.WaitGroup
	var mu sync.Mutex
	kept := 0
	for g := range goroutines {
		taken.Add(1)
		go func() {
			defer taken.Done()
			for i := range rounds {
				if ok, _ := tn.Take(cost, 0); !ok {
					continue
				}
				if (g+i)%2 == 0 {
					tn.Refund(cost, 0)
					continue
				}
				mu.Lock()
				kept++
				mu.Unlock()
			}
		}()
	}
	taken.Wait()
	if got, want := tn.Budgets[0].Bucket.Level(0), int64(max-3*kept); got != want {
		t.Fatalf("level %d after %d kept takes of 3 from %d, want %d", got, kept, max, want)
	}
	if ok, until := tn.Covers(config.Cost{"tokens": max}, 0); ok || until <= 0 {
		t.Fatalf("Covers(max) after takes = %v, %d; want false and a refill time", ok, until)
	}
}

// Settle gives back what a lease paid beyond what it spent, for the
// names it reports, and says whether it gave any back.
func TestATenantsSettleRefundsOnlyTheNamesItIsGiven(t *testing.T) {
	tn := NewTenant("a", config.Tenant{Limits: []config.Limit{
		{Name: "tokens", Max: 100, Per: time.Hour},
		{Name: "requests", Max: 10, Per: time.Hour},
	}}, 0)
	paid := config.Cost{"tokens": 40, "requests": 1}
	if ok, _ := tn.Take(paid, 0); !ok {
		t.Fatal("a full tenant did not cover the cost")
	}
	if !tn.Settle(paid, config.Cost{"tokens": 10}, 0) {
		t.Fatal("Settle with a smaller actual reported no refund")
	}
	if tk, rq := tn.Budgets[0].Bucket.Level(0), tn.Budgets[1].Bucket.Level(0); tk != 90 || rq != 9 {
		t.Fatalf("levels after settling tokens to 10: tokens %d, requests %d; want 90, 9", tk, rq)
	}
	if tn.Settle(paid, config.Cost{"tokens": 40}, 0) {
		t.Fatal("Settle at the amount paid reported a refund")
	}
}
