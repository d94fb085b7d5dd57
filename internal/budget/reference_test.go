package budget

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/crsched/crs/config"
)

// reference is the naive model of a bucket: the level as an exact
// rational, every rule written the way the documentation states it.
type reference struct {
	max, per int64
	level    *big.Rat
	last     int64
}

func newReference(l config.Limit, now int64) *reference {
	return &reference{max: l.Max, per: int64(l.Per), level: ratInt(l.Max), last: now}
}

func ratInt(n int64) *big.Rat { return new(big.Rat).SetInt64(n) }

// rate is max/per units per nanosecond.
func (r *reference) rate() *big.Rat {
	return new(big.Rat).SetFrac(big.NewInt(r.max), big.NewInt(r.per))
}

func (r *reference) refill(now int64) {
	if now <= r.last {
		return
	}
	elapsed := new(big.Int).Sub(big.NewInt(now), big.NewInt(r.last))
	gain := new(big.Rat).Mul(new(big.Rat).SetInt(elapsed), r.rate())
	r.level.Add(r.level, gain)
	r.capAtMax()
	r.last = now
}

func (r *reference) capAtMax() {
	if m := ratInt(r.max); r.level.Cmp(m) > 0 {
		r.level = m
	}
}

func (r *reference) floorAtMinWhole() {
	if f := ratInt(minWhole); r.level.Cmp(f) < 0 {
		r.level = f
	}
}

func (r *reference) covers(now, cost int64) bool {
	r.refill(now)
	return cost >= 0 && r.level.Cmp(ratInt(cost)) >= 0
}

func (r *reference) take(now, cost int64) bool {
	if !r.covers(now, cost) {
		return false
	}
	r.level.Sub(r.level, ratInt(cost))
	return true
}

func (r *reference) settle(now, estimate, actual int64) {
	if estimate < 0 || actual < 0 {
		return
	}
	r.refill(now)
	r.level.Add(r.level, ratInt(estimate))
	r.level.Sub(r.level, ratInt(actual))
	r.capAtMax()
	r.floorAtMinWhole()
}

func (r *reference) wait(now, cost int64) (time.Duration, bool) {
	if cost < 0 || cost > r.max {
		return Never, false
	}
	r.refill(now)
	deficit := new(big.Rat).Sub(ratInt(cost), r.level)
	if deficit.Sign() <= 0 {
		return 0, true
	}
	t := new(big.Rat).Quo(deficit, r.rate())
	if now < r.last { // nothing refills before the last reading
		t.Add(t, new(big.Rat).SetInt(new(big.Int).Sub(big.NewInt(r.last), big.NewInt(now))))
	}
	ns := new(big.Int).Quo(t.Num(), t.Denom())
	if new(big.Rat).SetInt(ns).Cmp(t) < 0 {
		ns.Add(ns, big.NewInt(1)) // the ceiling
	}
	if !ns.IsInt64() || ns.Int64() == math.MaxInt64 {
		return Never, true
	}
	return time.Duration(ns.Int64()), true
}

func (r *reference) clamp(now, remaining int64, reset time.Duration) {
	r.refill(now)
	if reset < 0 {
		reset = 0
	}
	bound := new(big.Rat).Sub(ratInt(r.max), new(big.Rat).Mul(ratInt(int64(reset)), r.rate()))
	if rem := ratInt(remaining); rem.Cmp(bound) < 0 {
		bound = rem
	}
	if bound.Cmp(r.level) < 0 {
		r.level = bound
	}
	r.floorAtMinWhole()
}

// resize keeps the level but rounds its fraction down to a multiple of
// 1/per of the new Per, as the bucket's remainder does.
func (r *reference) resize(now int64, l config.Limit) {
	r.refill(now)
	whole := floor(r.level)
	frac := new(big.Rat).Sub(r.level, new(big.Rat).SetInt(whole))
	scaled := floor(new(big.Rat).Mul(frac, ratInt(int64(l.Per))))
	r.level = new(big.Rat).Add(new(big.Rat).SetInt(whole), new(big.Rat).SetFrac(scaled, big.NewInt(int64(l.Per))))
	r.max, r.per = l.Max, int64(l.Per)
	r.capAtMax()
}

func floor(x *big.Rat) *big.Int {
	return new(big.Int).Div(x.Num(), x.Denom()) // Euclidean: rounds down, the denominator being positive
}

// exact is the bucket's level as a rational.
func (b *Bucket) exact() *big.Rat {
	frac := new(big.Rat).SetFrac(new(big.Int).SetUint64(b.frac), new(big.Int).SetUint64(b.per))
	return frac.Add(frac, ratInt(b.whole))
}

// regime draws the parameters of one random sequence.
type regime struct {
	name  string
	limit func(*rand.Rand) config.Limit
	step  func(*rand.Rand) int64 // how far the clock moves; may be negative
	units func(*rand.Rand, int64) int64
}

func anyInt64(rng *rand.Rand) int64 { return int64(rng.Uint64()) }

var regimes = []regime{
	{
		name: "small", // fractions everywhere: a few units per few nanoseconds
		limit: func(rng *rand.Rand) config.Limit {
			return config.Limit{Name: "x", Max: 1 + rng.Int64N(10), Per: time.Duration(1 + rng.Int64N(50))}
		},
		step:  func(rng *rand.Rand) int64 { return rng.Int64N(30) - 3 },
		units: func(rng *rand.Rand, max int64) int64 { return rng.Int64N(2*max + 3) },
	},
	{
		name: "provider", // per-minute limits of real APIs, millisecond steps
		limit: func(rng *rand.Rand) config.Limit {
			return config.Limit{Name: "tokens", Max: 1 + rng.Int64N(200_000), Per: time.Duration(1+rng.Int64N(120)) * time.Second}
		},
		step:  func(rng *rand.Rand) int64 { return rng.Int64N(int64(5*time.Second)) - int64(100*time.Millisecond) },
		units: func(rng *rand.Rand, max int64) int64 { return rng.Int64N(max + max/2 + 2) },
	},
	{
		name: "huge", // anything in range: overflow and saturation edges
		limit: func(rng *rand.Rand) config.Limit {
			return config.Limit{Name: "x", Max: 1 + rng.Int64N(math.MaxInt64), Per: time.Duration(1 + rng.Int64N(math.MaxInt64))}
		},
		step: func(rng *rand.Rand) int64 {
			if rng.IntN(2) == 0 {
				return rng.Int64N(1000)
			}
			return anyInt64(rng)
		},
		units: func(rng *rand.Rand, max int64) int64 {
			if rng.IntN(3) == 0 {
				return rng.Int64N(math.MaxInt64)
			}
			return rng.Int64N(max)
		},
	},
}

// saturatingAdd moves the clock by step, staying in the int64 range.
func saturatingAdd(now, step int64) int64 {
	s := now + step
	switch {
	case step > 0 && s < now:
		return math.MaxInt64
	case step < 0 && s > now:
		return math.MinInt64
	}
	return s
}

// Random sequences of every operation, each checked against the rational
// model after every step: the level exactly, waits to the nanosecond.
func TestBucketMatchesTheRationalModel(t *testing.T) {
	sequences, steps := 150, 120
	if testing.Short() {
		sequences = 30
	}
	for ri, rg := range regimes {
		t.Run(rg.name, func(t *testing.T) {
			for seq := 0; seq < sequences; seq++ {
				seed := uint64(ri)<<32 | uint64(seq)
				if err := runSequence(rg, seed, steps); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
			}
		})
	}
}

func runSequence(rg regime, seed uint64, steps int) error {
	rng := rand.New(rand.NewPCG(seed, 0x6275636b6574))
	now := anyInt64(rng) // a clock reading anywhere, far from zero
	l := rg.limit(rng)
	b, ref := NewBucket(l, now), newReference(l, now)
	for i := 0; i < steps; i++ {
		now = saturatingAdd(now, rg.step(rng))
		var op string
		switch k := rng.IntN(8); k {
		case 0:
			op = "refill"
			b.Refill(now)
			ref.refill(now)
		case 1, 2:
			cost := rg.units(rng, b.max)
			op = fmt.Sprintf("take(%d)", cost)
			if got, want := b.Take(now, cost), ref.take(now, cost); got != want {
				return fmt.Errorf("step %d %s = %v, model %v", i, op, got, want)
			}
		case 3:
			est, act := rg.units(rng, b.max), rg.units(rng, b.max)
			op = fmt.Sprintf("settle(%d, %d)", est, act)
			b.Settle(now, est, act)
			ref.settle(now, est, act)
		case 4:
			cost := rg.units(rng, b.max)
			op = fmt.Sprintf("wait(%d)", cost)
			snapshot := b
			got, gotOK := b.Wait(now, cost)
			want, wantOK := ref.wait(now, cost)
			if got != want || gotOK != wantOK {
				return fmt.Errorf("step %d %s = %v, %v; model %v, %v", i, op, got, gotOK, want, wantOK)
			}
			// The wait is the first nanosecond the cost is covered.
			if gotOK && got > 0 && got < Never && now <= math.MaxInt64-int64(got) {
				at := now + int64(got)
				after, before := snapshot, snapshot
				if !after.Covers(at, cost) || before.Covers(at-1, cost) {
					return fmt.Errorf("step %d %s = %v: not the first covering instant", i, op, got)
				}
			}
		case 5:
			rem := rg.units(rng, b.max) - rng.Int64N(3)
			reset := time.Duration(rg.units(rng, int64(b.per)))
			op = fmt.Sprintf("clamp(%d, %v)", rem, reset)
			b.Clamp(now, rem, reset)
			ref.clamp(now, rem, reset)
		case 6:
			nl := rg.limit(rng)
			op = fmt.Sprintf("resize(%+v)", nl)
			b.Resize(now, nl)
			ref.resize(now, nl)
		case 7:
			op = "level"
			ref.refill(now)
			if got, want := b.Level(now), floor(ref.level); !want.IsInt64() || got != want.Int64() {
				return fmt.Errorf("step %d level = %d, model %v", i, got, want)
			}
		}
		ref.refill(now)
		b.Refill(now)
		if b.exact().Cmp(ref.level) != 0 {
			return fmt.Errorf("step %d after %s: level %v, model %v", i, op, b.exact().RatString(), ref.level.RatString())
		}
		if b.frac >= b.per || b.whole > b.max || (b.whole == b.max && b.frac != 0) || b.whole < minWhole {
			return fmt.Errorf("step %d after %s: invariant broken: %d+%d/%d, max %d", i, op, b.whole, b.frac, b.per, b.max)
		}
	}
	return nil
}
