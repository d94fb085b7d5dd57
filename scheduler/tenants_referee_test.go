package scheduler_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/scheduler"
)

// spend is what one grant to a tenant finally spent of its limits.
type spend struct {
	at     time.Duration
	tenant string
	cost   config.Cost // as settled
}

// Random histories of leases by tenants with random limits, random
// costs, settlements below the estimate and clock steps never let a
// tenant spend more than Max + Max*t/Per of any of its limits in any
// window of length t.
func TestRandomHistoriesKeepEveryTenantLimitInEveryWindow(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 44))
			tenants := map[string]config.Tenant{}
			for _, name := range []string{"a", "b", "c"} {
				tenants[name] = config.Tenant{Weight: rng.Int64N(3), Limits: []config.Limit{
					{Name: "requests", Max: 1 + rng.Int64N(5), Per: time.Duration(100+rng.IntN(900)) * time.Millisecond},
					{Name: "tokens", Max: 10 + rng.Int64N(90), Per: time.Second},
				}}
			}
			spends := randomHistory(t, rng, tenants)
			for name, tn := range tenants {
				for _, l := range tn.Limits {
					refereeSpends(t, spends, name, l)
				}
			}
		})
	}
}

// randomHistory runs 2,000 random steps on a pool of three resources
// and returns every grant's final spend.
func randomHistory(t *testing.T, rng *rand.Rand, tenants map[string]config.Tenant) []*spend {
	clock := fakeclock.New()
	cfg := baseConfig(2, config.Exclusive)
	cfg.Clock = clock
	cfg.Tenants = func(name string) config.Tenant { return tenants[name] }
	s := newScheduler(t, cfg)
	addAll(t, s, w("x", 0), w("y", 1), w("z", 2))
	type held struct {
		l scheduler.Lease[*worker, string]
		s *spend
	}
	var leases []held
	var spends []*spend
	var now time.Duration
	names := []string{"a", "b", "c"}
	for range 2000 {
		switch op := rng.IntN(10); {
		case op < 5:
			name := names[rng.IntN(3)]
			cost := config.Cost{"tokens": rng.Int64N(tenants[name].Limits[1].Max + 1)}
			if l, ok := leaseNowAs(s, name, scheduler.WithCost(cost), scheduler.AllowUnknownLimits()); ok {
				sp := &spend{now, name, cost}
				spends = append(spends, sp)
				leases = append(leases, held{l, sp})
			}
		case op < 8 && len(leases) > 0:
			i := rng.IntN(len(leases))
			h := leases[i]
			if rng.IntN(3) == 0 {
				actual := config.Cost{"tokens": rng.Int64N(h.s.cost["tokens"] + 1)}
				if err := h.l.Settle(actual); err != nil {
					t.Fatal(err)
				}
				h.s.cost = actual
			}
			if err := h.l.Release(); err != nil {
				t.Fatal(err)
			}
			leases = append(leases[:i], leases[i+1:]...)
		default:
			d := time.Duration(rng.IntN(50)) * time.Millisecond
			clock.Advance(d)
			now += d
		}
	}
	for _, h := range leases {
		_ = h.l.Release()
	}
	return spends
}

// refereeSpends checks every window of tenant's spends of limit l.
func refereeSpends(t *testing.T, spends []*spend, tenant string, l config.Limit) {
	t.Helper()
	var mine []*spend
	for _, sp := range spends {
		if sp.tenant == tenant {
			mine = append(mine, sp)
		}
	}
	for i := range mine {
		var sum int64
		for j := i; j < len(mine); j++ {
			sum += mine[j].cost.Of(l.Name)
			span := mine[j].at - mine[i].at
			allowed := float64(l.Max) + float64(l.Max)*float64(span)/float64(l.Per)
			if float64(sum) > allowed {
				t.Fatalf("tenant %q spent %d of %q in [%v, %v]: above %v", tenant, sum, l.Name, mine[i].at, mine[j].at, allowed)
			}
		}
	}
}
