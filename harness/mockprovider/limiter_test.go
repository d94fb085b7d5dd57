package mockprovider

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/budget"
)

// The mock's limiter and crs's internal/bucket are written apart, so that
// the mock can referee crs; driven by the same random calls they must
// agree on every admission, every remaining count and every wait, to the
// nanosecond, or one of them is wrong.
func TestLimiterAgreesWithTheCoreBucket(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		max := 1 + rng.Int64N(100_000)
		start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		now := start
		l := newLimiter(max, now)
		b := budget.NewBucket(config.Limit{Name: "tokens", Max: max, Per: time.Minute}, now.UnixNano())
		var held []int64 // estimates taken and not yet settled
		for step := 0; step < 300; step++ {
			now = now.Add(time.Duration(rng.Int64N(int64(2 * time.Second))))
			ns := now.UnixNano()
			l.refill(now)
			switch rng.IntN(4) {
			case 0, 1:
				n := 1 + rng.Int64N(max)
				if got, want := l.covers(n), b.Covers(ns, n); got != want {
					t.Fatalf("seed %d step %d: covers(%d) = %v, bucket %v", seed, step, n, got, want)
				}
				if l.covers(n) {
					l.take(n)
					b.Take(ns, n)
					held = append(held, n)
				}
				if w, _ := b.Wait(ns, n); l.wait(n) != w {
					t.Fatalf("seed %d step %d: wait(%d) = %v, bucket %v", seed, step, n, l.wait(n), w)
				}
			case 2:
				if len(held) == 0 {
					continue
				}
				est := held[0]
				held = held[1:]
				used := rng.Int64N(est + 1)
				l.refund(est - used)
				b.Settle(ns, est, used)
			case 3:
				if d, _ := b.Wait(ns, max); l.reset() != d {
					t.Fatalf("seed %d step %d: reset = %v, bucket %v", seed, step, l.reset(), d)
				}
			}
			if got, want := l.remaining(), b.Level(ns); got != want {
				t.Fatalf("seed %d step %d: remaining %d, bucket %d", seed, step, got, want)
			}
		}
	}
}
