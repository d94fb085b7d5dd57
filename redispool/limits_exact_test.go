package redispool

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/crsched/crs/config"
)

// The scripts' deepest debt (MIN_UNITS) and longest rest (LONGEST_WAIT)
// in lua/resource.lua.
const (
	minUnits    = -(1 << 51)
	longestWait = 1 << 52
)

// bucketModel is a token bucket in exact big integers: its level in
// units of 1/per, refilled by max per ms up to max x per.
type bucketModel struct {
	max, per *big.Int
	level    *big.Int
}

func newBucketModel(b rawBucket) bucketModel {
	m := bucketModel{max: big.NewInt(b.max), per: big.NewInt(b.per)}
	m.level = new(big.Int).Mul(big.NewInt(b.units), m.per)
	m.level.Add(m.level, big.NewInt(b.rem))
	return m
}

func (m bucketModel) full() *big.Int { return new(big.Int).Mul(m.max, m.per) }

// refill adds dt ms of refill, up to full.
func (m bucketModel) refill(dt int64) {
	if dt <= 0 || m.level.Cmp(m.full()) >= 0 {
		return
	}
	m.level.Add(m.level, new(big.Int).Mul(big.NewInt(dt), m.max))
	if m.level.Cmp(m.full()) > 0 {
		m.level.Set(m.full())
	}
}

// take removes units (negative: gives back, up to full), down to the
// deepest debt the scripts record.
func (m bucketModel) take(units int64) {
	m.level.Sub(m.level, new(big.Int).Mul(big.NewInt(units), m.per))
	if m.level.Cmp(m.full()) > 0 {
		m.level.Set(m.full())
	}
	if deepest := new(big.Int).Mul(big.NewInt(minUnits), m.per); m.level.Cmp(deepest) < 0 {
		m.level.Set(deepest)
	}
}

// wait is how many ms until the bucket holds units, capped as the
// scripts cap a rest.
func (m bucketModel) wait(units int64) int64 {
	need := new(big.Int).Mul(big.NewInt(units), m.per)
	need.Sub(need, m.level)
	if need.Sign() <= 0 {
		return 0
	}
	need.Add(need, new(big.Int).Sub(m.max, big.NewInt(1)))
	need.Quo(need, m.max)
	if !need.IsInt64() || need.Int64() > longestWait {
		return longestWait
	}
	return need.Int64()
}

var bucketTime = regexp.MustCompile(` t\d+`)

// TestHugeLongLimitsKeepExactBuckets runs buckets of billions of units a
// day, and of the largest Max for their Per that the scripts take (see
// MaxLimitMax), through grants,
// settlements (refunds, debts, debts past the deepest) and Syncs, and
// checks every stored level, rest and full-again time against an exact
// big-integer model. Time is the server's: before each call the test
// moves the bucket's last refill back by up to three Pers, and reads
// the time of the call from the bucket it stored, so what it expects
// does not depend on how long the calls take.
func TestHugeLongLimitsKeepExactBuckets(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	limits := []config.Limit{
		{Name: "tokens", Max: 3_000_000_019, Per: day},
		{Name: "big", Max: MaxLimitMax, Per: 94906264 * time.Millisecond},
		{Name: "week", Max: 14_892_853, Per: 7 * day},
		{Name: "slow", Max: 7, Per: 365 * day},
		{Name: "fast", Max: 1_000_003, Per: 7 * time.Millisecond},
	}
	add(t, p, Resource{ID: "a", Limits: limits})
	rng := rand.New(rand.NewPCG(29, 51))

	read := func() *rawResource {
		r := readState(t, c, p).resources["a"]
		if r == nil || len(r.buckets) != len(limits) {
			t.Fatalf("resource a: %+v", r)
		}
		return r
	}
	// backdate moves the buckets' last refill ms back and returns the
	// resource as the next call finds it.
	backdate := func(ms int64) *rawResource {
		v, err := c.HGet(ctx, p.keys[0], "ra").Result()
		if err != nil {
			t.Fatal(err)
		}
		r := read()
		r.bucketTime -= ms
		v = bucketTime.ReplaceAllString(v, " t"+strconv.FormatInt(r.bucketTime, 10))
		if err := c.HSet(ctx, p.keys[0], "ra", v).Err(); err != nil {
			t.Fatal(err)
		}
		return r
	}
	someMs := func() int64 {
		switch rng.IntN(4) {
		case 0:
			return 0
		case 1:
			return rng.Int64N(1000)
		default:
			per := limits[rng.IntN(len(limits))].Per.Milliseconds()
			return rng.Int64N(3 * per)
		}
	}
	models := func(r *rawResource) []bucketModel {
		ms := make([]bucketModel, len(r.buckets))
		for i, b := range r.buckets {
			ms[i] = newBucketModel(b)
		}
		return ms
	}
	// expect checks after against before's models refilled to after's
	// time and changed by take, or cut to after's Max when it differs;
	// rested: the call worked out the rest and full-again time.
	expect := func(step string, before, after *rawResource, take []int64, rested bool) {
		t.Helper()
		ms := models(before)
		var rest, fullAt int64
		for i, m := range ms {
			m.refill(after.bucketTime - before.bucketTime)
			if take != nil {
				m.take(take[i])
			}
			b := after.buckets[i]
			if b.max != before.buckets[i].max {
				// Sync keeps the level, cut to the new Max (same Per).
				m.max = big.NewInt(b.max)
				if m.level.Cmp(m.full()) > 0 {
					m.level.Set(m.full())
				}
			}
			if got := newBucketModel(b).level; got.Cmp(m.level) != 0 || b.rem < 0 || b.rem >= b.per {
				t.Fatalf("%s: bucket %s is %d+%d/%d, want %v/%d", step, b.name, b.units, b.rem, b.per, m.level, b.per)
			}
			if w := m.wait(1); w > 0 {
				rest = max(rest, after.bucketTime+w)
			}
			if w := m.wait(b.max); w > 0 {
				fullAt = max(fullAt, after.bucketTime+w)
			}
		}
		if rested && (after.restEnd != rest || after.fullAt != fullAt) {
			t.Fatalf("%s: rests until %d and is full at %d, want %d and %d", step, after.restEnd, after.fullAt, rest, fullAt)
		}
	}

	for step := range 150 {
		before := backdate(someMs())
		cost := config.Cost{}
		take := make([]int64, len(limits))
		for i, l := range limits {
			units := before.buckets[i].units
			switch {
			case rng.IntN(8) == 0:
				take[i] = rng.Int64N(l.Max + 1)
			case units > 0:
				take[i] = rng.Int64N(units + 1)
			}
			cost[l.Name] = take[i]
		}
		l, err := tryCost(t, p, cost)
		after := read()
		if err != nil {
			expect(fmt.Sprintf("step %d: refused %v", step, cost), before, after, nil, false)
		} else {
			expect(fmt.Sprintf("step %d: grant of %v", step, cost), before, after, take, true)
			before = backdate(someMs())
			actual := config.Cost{}
			for i, lim := range limits {
				a := rng.Int64N(2*take[i] + 2)
				if lim.Name == "big" && rng.IntN(5) == 0 {
					// Past the deepest debt, which one Per repays.
					a = config.MaxUnits
				}
				actual[lim.Name] = a
				take[i] = a - take[i]
			}
			if err := l.Settle(ctx, actual); err != nil {
				t.Fatalf("step %d: Settle: %v", step, err)
			}
			after = read()
			expect(fmt.Sprintf("step %d: settle of %v", step, actual), before, after, take, true)
			mustRelease(t, l)
		}
		if read().restEnd != 0 {
			// A Sync that changes a limit works the rest out again.
			limits[4].Max ^= 1
			before = backdate(someMs())
			if err := p.Sync(ctx, []Resource{{ID: "a", Limits: limits}}); err != nil {
				t.Fatal(err)
			}
			expect(fmt.Sprintf("step %d: sync", step), before, read(), nil, true)
		}
		checkInvariants(t, c, p)
	}
}
