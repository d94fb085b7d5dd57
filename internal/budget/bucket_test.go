package budget

import (
	"math"
	"testing"
	"time"

	"github.com/crsched/crs/config"
)

var perMinute = config.Limit{Name: "tokens", Max: 600, Per: time.Minute} // one unit per 100 ms

const ms = int64(time.Millisecond)

func TestNewBucketIsFull(t *testing.T) {
	b := NewBucket(perMinute, 0)
	if got := b.Level(0); got != 600 {
		t.Fatalf("Level = %d, want 600", got)
	}
	if b.Max() != 600 || b.Per() != time.Minute {
		t.Fatalf("Max, Per = %d, %v", b.Max(), b.Per())
	}
}

func TestNewPanicsOnAnInvalidLimit(t *testing.T) {
	for _, l := range []config.Limit{{Name: "x", Max: 0, Per: 1}, {Name: "x", Max: 1, Per: 0}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewBucket(%+v) did not panic", l)
				}
			}()
			NewBucket(l, 0)
		}()
	}
}

func TestTakeRefusesWhatTheLevelDoesNotCover(t *testing.T) {
	b := NewBucket(perMinute, 0)
	if !b.Take(0, 599) {
		t.Fatal("Take(599) of a full bucket refused")
	}
	if b.Take(0, 2) {
		t.Fatal("Take(2) with 1 left granted")
	}
	if got := b.Level(0); got != 1 {
		t.Fatalf("a refused Take changed the level: %d, want 1", got)
	}
	if !b.Take(0, 1) || b.Level(0) != 0 {
		t.Fatal("Take(1) with 1 left refused")
	}
	if !b.Take(0, 0) {
		t.Fatal("Take(0) of an empty bucket refused: a zero cost exempts the call")
	}
	if b.Take(0, -1) {
		t.Fatal("Take(-1) granted")
	}
}

// One unit per 100 ms: the level reaches 1 exactly at 100 ms, not a
// nanosecond before, and the fractions of many short steps add up to the
// same as one long step.
func TestRefillKeepsTheSubUnitRemainder(t *testing.T) {
	b := NewBucket(perMinute, 0)
	b.Take(0, 600)
	if b.Covers(100*ms-1, 1) {
		t.Fatal("1 unit covered a nanosecond before it has refilled")
	}
	if !b.Covers(100*ms, 1) {
		t.Fatal("1 unit not covered after 100 ms")
	}
	stepped := NewBucket(perMinute, 0)
	stepped.Take(0, 600)
	for now := int64(0); now <= 1000*ms; now += 7 * ms {
		stepped.Refill(now)
	}
	stepped.Refill(1000 * ms)
	once := NewBucket(perMinute, 0)
	once.Take(0, 600)
	once.Refill(1000 * ms)
	if stepped.whole != once.whole || stepped.frac != once.frac {
		t.Fatalf("stepped refill %d+%d/per, one refill %d+%d/per", stepped.whole, stepped.frac, once.whole, once.frac)
	}
	if once.whole != 10 || once.frac != 0 {
		t.Fatalf("after 1 s: %d+%d/per, want exactly 10", once.whole, once.frac)
	}
}

func TestRefillStopsAtMax(t *testing.T) {
	b := NewBucket(perMinute, 0)
	b.Take(0, 1)
	b.Refill(int64(time.Hour))
	if b.whole != 600 || b.frac != 0 {
		t.Fatalf("after an hour: %d+%d/per, want 600", b.whole, b.frac)
	}
	// Refill lost while full is not banked: taking everything now leaves
	// an empty bucket.
	b.Take(int64(time.Hour), 600)
	if b.Covers(int64(time.Hour)+100*ms-1, 1) {
		t.Fatal("a full bucket banked refill")
	}
}

// A clock reading before the last one adds nothing, and the span between
// is not counted again when the clock comes back.
func TestRefillIgnoresAClockSteppingBack(t *testing.T) {
	b := NewBucket(perMinute, 1000*ms)
	b.Take(1000*ms, 600)
	b.Refill(500 * ms)
	if got := b.Level(500 * ms); got != 0 {
		t.Fatalf("level after stepping back = %d, want 0", got)
	}
	if got := b.Level(1100 * ms); got != 1 {
		t.Fatalf("level 100 ms after the last reading = %d, want 1", got)
	}
}

func TestWaitIsTheExactNanosecond(t *testing.T) {
	b := NewBucket(perMinute, 0)
	b.Take(0, 600)
	b.Refill(50 * ms) // half a unit
	d, ok := b.Wait(50*ms, 3)
	if !ok || d != 250*time.Millisecond {
		t.Fatalf("Wait(3) = %v, %v, want 250ms, true", d, ok)
	}
	if d, ok := b.Wait(50*ms, 0); !ok || d != 0 {
		t.Fatalf("Wait(0) = %v, %v, want 0, true", d, ok)
	}
	// A rate that does not divide: 3 units per 10 ns, 10/3 ns per unit.
	c := NewBucket(config.Limit{Name: "x", Max: 3, Per: 10}, 0)
	c.Take(0, 3)
	if d, _ := c.Wait(0, 1); d != 4 {
		t.Fatalf("Wait(1) at 3 per 10ns = %v, want 4ns (ceil of 10/3)", d)
	}
	if c.Covers(3, 1) || !c.Covers(4, 1) {
		t.Fatal("Covers disagrees with Wait")
	}
}

func TestWaitForMoreThanMaxIsNever(t *testing.T) {
	b := NewBucket(perMinute, 0)
	for _, cost := range []int64{601, math.MaxInt64, -1, math.MinInt64} {
		if d, ok := b.Wait(0, cost); ok || d != Never {
			t.Errorf("Wait(%d) = %v, %v, want Never, false", cost, d, ok)
		}
	}
	if d, ok := b.Wait(0, 600); !ok || d != 0 {
		t.Errorf("Wait(Max) of a full bucket = %v, %v, want 0, true", d, ok)
	}
}

func TestSettleRefundsUpToMax(t *testing.T) {
	b := NewBucket(perMinute, 0)
	b.Take(0, 500)
	b.Settle(0, 500, 120)
	if got := b.Level(0); got != 480 {
		t.Fatalf("after refunding 380 of 500: level %d, want 480", got)
	}
	b.Settle(0, 10_000, 0)
	if b.whole != 600 || b.frac != 0 {
		t.Fatalf("a refund past Max: %d+%d/per, want 600", b.whole, b.frac)
	}
	b.Settle(0, 5, 5)
	if got := b.Level(0); got != 600 {
		t.Fatalf("an exact estimate changed the level: %d", got)
	}
}

// A call that spent more than its estimate leaves a debt, which blocks
// every cost, even 0, until the refill repays it.
func TestSettleIntoDebtRestsTheBucketUntilRepaid(t *testing.T) {
	b := NewBucket(perMinute, 0)
	b.Take(0, 600)
	b.Settle(0, 100, 105) // 5 more than estimated
	if got := b.Level(0); got != -5 {
		t.Fatalf("level %d, want -5", got)
	}
	if b.Covers(0, 0) || b.Take(0, 0) {
		t.Fatal("a bucket in debt covered a zero cost")
	}
	d, ok := b.Wait(0, 0)
	if !ok || d != 500*time.Millisecond {
		t.Fatalf("Wait(0) in debt = %v, %v, want 500ms", d, ok)
	}
	if b.Covers(int64(d)-1, 0) || !b.Covers(int64(d), 0) {
		t.Fatal("the debt was not repaid exactly at the wait")
	}
}

func TestSettleIgnoresNegativeAmounts(t *testing.T) {
	b := NewBucket(perMinute, 0)
	b.Take(0, 100)
	b.Settle(0, -1, 50)
	b.Settle(0, 50, -1)
	if got := b.Level(0); got != 500 {
		t.Fatalf("level %d, want 500 (unchanged)", got)
	}
}

func TestSettleSaturatesADeepDebt(t *testing.T) {
	b := NewBucket(config.Limit{Name: "x", Max: math.MaxInt64, Per: 1}, 0)
	b.Take(0, math.MaxInt64)
	b.Settle(0, 0, math.MaxInt64)
	b.Settle(0, 0, math.MaxInt64)
	if b.whole != minWhole || b.frac != 0 {
		t.Fatalf("debt %d+%d/per, want %d", b.whole, b.frac, int64(minWhole))
	}
	// The refill still works from there without wrapping: MaxInt64 units
	// per nanosecond repay it in 1 ns.
	if b.Covers(0, 0) || !b.Covers(1, 0) {
		t.Fatal("a saturated debt is not repaid as the rate says")
	}
	// One unit past the deepest debt: -1 - MaxInt64 is math.MinInt64,
	// which fits an int64 but not the invariant, and saturates too.
	c := NewBucket(perMinute, 0)
	c.Take(0, 600)
	c.Settle(0, 0, 1)
	c.Settle(0, 0, math.MaxInt64)
	if c.whole != minWhole || c.frac != 0 {
		t.Fatalf("debt one past the deepest: %d+%d/per, want %d", c.whole, c.frac, int64(minWhole))
	}
}

// A settlement that lands exactly on the deepest debt recorded is not a
// saturation: the level is -MaxInt64 plus the remainder it had, not
// -MaxInt64.
func TestSettleToExactlyTheDeepestDebtKeepsTheRemainder(t *testing.T) {
	b := NewBucket(perMinute, 0)
	b.Take(0, 600)
	b.Refill(50 * ms) // half a unit
	b.Settle(50*ms, 0, math.MaxInt64)
	if b.whole != minWhole || b.frac != uint64(30*time.Second) {
		t.Fatalf("debt %d+%d/per, want %d + half of 1m", b.whole, b.frac, int64(minWhole))
	}
}

func TestClampLowersToTheProviderReport(t *testing.T) {
	limit := config.Limit{Name: "tokens", Max: 40000, Per: time.Minute}
	b := NewBucket(limit, 0)
	// The provider says 30,000 left, full again in 15 s: consistent with
	// the same rate, so the remaining figure binds.
	b.Clamp(0, 30000, 15*time.Second)
	if b.whole != 30000 || b.frac != 0 {
		t.Fatalf("level %d+%d/per, want 30000", b.whole, b.frac)
	}
	// The provider says 30,000 left but full again only in 30 s: its
	// bucket refills slower than ours from there, or it counts calls we
	// do not know of; the reset figure binds (40,000 - 30 s x 40,000/min).
	b.Clamp(0, 30000, 30*time.Second)
	if got := b.Level(0); got != 20000 {
		t.Fatalf("level %d, want 20000", got)
	}
	// A report of more than the bucket believes changes nothing.
	b.Clamp(0, 40000, 0)
	if got := b.Level(0); got != 20000 {
		t.Fatalf("Clamp raised the level to %d", got)
	}
	// A reset longer than Per is a debt to wait out.
	b.Clamp(0, 0, 2*time.Minute)
	if got := b.Level(0); got != -40000 {
		t.Fatalf("level %d, want -40000", got)
	}
	// The longest reset: 40,000 - MaxInt64 ns x 40,000/min, whose floor
	// is -6,148,914,651,237 (the quotient ends in a half).
	b.Clamp(0, 0, time.Duration(math.MaxInt64))
	if got := b.Level(0); got != -6_148_914_651_237 {
		t.Fatalf("level %d, want -6148914651237", got)
	}
	// With the largest Max the bound is past the deepest debt recorded.
	c := NewBucket(config.Limit{Name: "tokens", Max: config.MaxUnits, Per: time.Minute}, 0)
	c.Clamp(0, config.MaxUnits, time.Duration(math.MaxInt64))
	if got := c.Level(0); got != minWhole {
		t.Fatalf("level %d, want %d", got, int64(minWhole))
	}
}

// A reset that does not fall on a unit boundary keeps the remainder:
// 40,000 per minute is 2/3 unit per millisecond.
func TestClampKeepsTheRemainderOfTheResetBound(t *testing.T) {
	b := NewBucket(config.Limit{Name: "tokens", Max: 40000, Per: time.Minute}, 0)
	b.Clamp(0, 40000, time.Millisecond) // 40000 - 2/3
	if b.Covers(0, 40000) || !b.Covers(0, 39999) {
		t.Fatal("the bound is not 40000 - 2/3")
	}
	if d, _ := b.Wait(0, 40000); d != time.Millisecond {
		t.Fatalf("Wait to full = %v, want 1ms, the reset the provider gave", d)
	}
}

func TestResizeKeepsTheLevel(t *testing.T) {
	b := NewBucket(perMinute, 0)
	b.Take(0, 500)
	b.Resize(0, config.Limit{Name: "tokens", Max: 1200, Per: time.Minute})
	if got := b.Level(0); got != 100 {
		t.Fatalf("after raising Max: level %d, want 100", got)
	}
	if d, _ := b.Wait(0, 101); d != 50*time.Millisecond {
		t.Fatalf("Wait(101) at the new rate = %v, want 50ms", d)
	}
	b.Resize(0, config.Limit{Name: "tokens", Max: 40, Per: time.Second})
	if b.whole != 40 || b.frac != 0 {
		t.Fatalf("after lowering Max: %d+%d/per, want 40", b.whole, b.frac)
	}
	// The remainder is rescaled: half a unit stays half a unit.
	c := NewBucket(perMinute, 0)
	c.Take(0, 600)
	c.Refill(50 * ms)
	c.Resize(50*ms, config.Limit{Name: "tokens", Max: 600, Per: 2 * time.Minute})
	if c.whole != 0 || c.frac != uint64(time.Minute) {
		t.Fatalf("rescaled remainder %d+%d/per, want 0 + half of 2m", c.whole, c.frac)
	}
}

// Readings at both ends of the int64 range: the span between them is
// 2^64-1 nanoseconds, which must refill, not wrap into a negative span.
func TestClockReadingsFarFromZero(t *testing.T) {
	b := NewBucket(config.Limit{Name: "x", Max: 1, Per: time.Duration(math.MaxInt64)}, math.MinInt64)
	b.Take(math.MinInt64, 1)
	if b.Covers(-2, 1) { // a nanosecond short of Per after the first reading
		t.Fatal("covered before Per has passed")
	}
	if !b.Covers(-1, 1) {
		t.Fatal("not covered once Per has passed")
	}
	b.Take(-1, 1)
	if !b.Covers(math.MaxInt64, 1) {
		t.Fatal("not covered at the last reading")
	}
	c := NewBucket(config.Limit{Name: "x", Max: math.MaxInt64, Per: 1}, math.MinInt64)
	c.Take(math.MinInt64, math.MaxInt64)
	c.Refill(math.MaxInt64) // 2^64-1 ns x MaxInt64 units per ns
	if c.whole != math.MaxInt64 || c.frac != 0 {
		t.Fatalf("%d+%d/per, want full", c.whole, c.frac)
	}
}

// The slowest rate and the deepest debt: the wait does not fit in a
// Duration and saturates, while the bucket can still, in principle, cover
// the cost.
func TestWaitSaturatesInsteadOfOverflowing(t *testing.T) {
	b := NewBucket(config.Limit{Name: "x", Max: 1, Per: time.Duration(math.MaxInt64)}, 0)
	b.Take(0, 1)
	if d, ok := b.Wait(0, 1); !ok || d != time.Duration(math.MaxInt64) {
		t.Fatalf("Wait = %v, %v, want the longest duration, true", d, ok)
	}
	b.Settle(0, 0, math.MaxInt64)
	if d, ok := b.Wait(0, 1); !ok || d != Never {
		t.Fatalf("Wait in deep debt = %v, %v, want Never, true", d, ok)
	}
	c := NewBucket(config.Limit{Name: "x", Max: math.MaxInt64, Per: time.Duration(math.MaxInt64)}, 0)
	c.Take(0, math.MaxInt64)
	if d, ok := c.Wait(0, math.MaxInt64); !ok || d != time.Duration(math.MaxInt64) {
		t.Fatalf("Wait(Max) at Max per Per = %v, %v, want Per", d, ok)
	}
	// A wait whose floor is the longest Duration but which ends half a
	// nanosecond later: 2 units per 3 ns and a debt of (2^64-1)/3 units
	// take (2^64-1)/2 ns, MaxInt64 + 1/2, to repay; the ceiling is past
	// the longest Duration.
	e := NewBucket(config.Limit{Name: "x", Max: 2, Per: 3}, 0)
	e.Take(0, 2)
	e.Settle(0, 0, 6148914691236517205)
	if d, ok := e.Wait(0, 0); !ok || d != Never {
		t.Fatalf("Wait of MaxInt64 + 1/2 ns = %v, %v, want Never, true", d, ok)
	}
}

// Products whose high 64 bits equal the divisor exactly: the quotient
// does not fit in 64 bits, and must saturate rather than reach the
// division (which would panic).
func TestProductsOfExactly64BitsOverTheDivisorSaturate(t *testing.T) {
	huge := config.Limit{Name: "x", Max: math.MaxInt64, Per: 1}
	// Refill: 4 ns x (2^63-1) units per ns is 2^65-4, high word 1 = Per.
	b := NewBucket(huge, 0)
	b.Take(0, math.MaxInt64)
	b.Refill(4)
	if b.whole != math.MaxInt64 || b.frac != 0 {
		t.Fatalf("refill: %d+%d/per, want full", b.whole, b.frac)
	}
	// Clamp: a reset of 4 ns gives the same product; the bound is far
	// below the deepest debt.
	b.Clamp(4, math.MaxInt64, 4)
	if b.whole != minWhole {
		t.Fatalf("clamp: level %d, want %d", b.whole, int64(minWhole))
	}
	// Wait: a debt of 2 at 1 unit per MaxInt64 ns is 3 x (2^63-1) ns to
	// cover 1, high word 1 = Max.
	slow := NewBucket(config.Limit{Name: "x", Max: 1, Per: time.Duration(math.MaxInt64)}, 0)
	slow.Take(0, 1)
	slow.Settle(0, 0, 2)
	if d, ok := slow.Wait(0, 1); !ok || d != Never {
		t.Fatalf("wait: %v, %v, want Never, true", d, ok)
	}
}

// A bound that lands a fraction below the deepest debt recorded is
// recorded as that debt, not one unit below it: 3 units per 2 ns and a
// reset of 6148914691236517207 ns give 3 - (2^63 + 2) - 1/2 units.
func TestClampJustBelowTheDeepestDebtSaturates(t *testing.T) {
	b := NewBucket(config.Limit{Name: "x", Max: 3, Per: 2}, 0)
	b.Clamp(0, 3, 6148914691236517207)
	if b.whole != minWhole || b.frac != 0 {
		t.Fatalf("level %d+%d/per, want %d", b.whole, b.frac, int64(minWhole))
	}
}

func TestRaiseLiftsTheLevelUpToMaxAndNeverLowers(t *testing.T) {
	b := NewBucket(config.Limit{Name: "tokens", Max: 1000, Per: time.Minute}, 0)
	b.Take(0, 900)
	b.Refill(30 * int64(time.Millisecond)) // 0.5 of a unit refilled: a remainder
	b.Raise(30*int64(time.Millisecond), 400)
	if b.whole != 400 || b.frac != 0 {
		t.Fatalf("level %d+%d/per, want 400", b.whole, b.frac)
	}
	b.Raise(30*int64(time.Millisecond), 300)
	if got := b.Level(30 * int64(time.Millisecond)); got != 400 {
		t.Fatalf("Raise lowered the level to %d", got)
	}
	b.Raise(30*int64(time.Millisecond), 5000)
	if b.whole != 1000 || b.frac != 0 {
		t.Fatalf("level %d+%d/per, want Max", b.whole, b.frac)
	}
	b.Take(0, 1000)
	b.Settle(0, 0, 500) // in debt
	b.Raise(0, -100)
	if got := b.Level(0); got != -100 {
		t.Fatalf("level %d, want the debt raised to -100", got)
	}
}

// A bucket of a limit counted at the provider's admission refills, once
// a grant takes it from full, only from the next answer: the provider's
// bucket started refilling at some moment up to then, never before the
// grant.
func TestABucketCountedAtAdmissionRefillsFromTheAnswer(t *testing.T) {
	sec := int64(time.Second)
	b := NewBucket(config.Limit{Name: "tokens", Max: 60, Per: time.Minute, Admission: true}, 0)
	b.Take(0, 30) // from full: the refill waits for an answer
	if got := b.Level(10 * sec); got != 30 {
		t.Fatalf("level %d before any answer, want 30", got)
	}
	b.Admitted(10 * sec)
	if got := b.Level(15 * sec); got != 35 {
		t.Fatalf("level %d 5 s after the answer, want 35", got)
	}
	b.Take(15*sec, 5) // not from full: the refill goes on
	b.Admitted(20 * sec)
	if got := b.Level(20 * sec); got != 35 {
		t.Fatalf("level %d, want 35", got)
	}
	plain := NewBucket(config.Limit{Name: "tokens", Max: 60, Per: time.Minute}, 0)
	plain.Take(0, 30)
	if got := plain.Level(10 * sec); got != 40 {
		t.Fatalf("a plain bucket: level %d after 10 s, want 40", got)
	}
}
