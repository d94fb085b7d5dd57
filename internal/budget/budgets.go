package budget

import (
	"math"
	"slices"
	"time"

	"github.com/crsched/crs/config"
)

// Budget is one limit of a resource: its name, from config.Limit, and its
// bucket. A budget with no name (which no config.Limit of a user may have)
// is a rate limit (config.Config.RateLimit): every hold takes one unit of
// it, whatever its cost names, no settlement or observation changes it,
// and it is not one of the limits a cost can exceed (Limits).
type Budget struct {
	Name   string
	Bucket Bucket
	// Born is the resource's lease token count when the bucket was made:
	// leases with a token above it paid into it, the others (granted
	// before an Update added the limit) did not, so their settlement
	// leaves it alone.
	Born uint64
}

// PerHold reports whether b is a rate limit: one unit a hold.
func (b *Budget) PerHold() bool { return b.Name == "" }

// units is what cost asks of b.
func (b *Budget) units(cost config.Cost) int64 {
	if b.PerHold() {
		return 1
	}
	return cost.Of(b.Name)
}

// Budgets are a resource's budgets, one per limit. Not safe for
// concurrent use: the owner guards them.
type Budgets []Budget

// New makes full buckets for limits, as of now, born at born; nil for no
// limits. limits must be valid (config.ValidateLimits).
func New(limits []config.Limit, now int64, born uint64) Budgets {
	if len(limits) == 0 {
		return nil
	}
	bs := make(Budgets, len(limits))
	for i, l := range limits {
		bs[i] = Budget{Name: l.Name, Bucket: NewBucket(l, now), Born: born}
	}
	return bs
}

// Retuned returns the budgets for new limits, as of now: a bucket whose
// name stays keeps its level (Bucket.Resize), a new one starts full and
// is born at born, a dropped one goes. bs itself is left alone, so that
// its owner can undo.
func (bs Budgets) Retuned(limits []config.Limit, now int64, born uint64) Budgets {
	if len(limits) == 0 {
		return nil
	}
	out := make(Budgets, len(limits))
	for i, l := range limits {
		j := slices.IndexFunc(bs, func(b Budget) bool { return b.Name == l.Name })
		if j < 0 {
			out[i] = Budget{Name: l.Name, Bucket: NewBucket(l, now), Born: born}
			continue
		}
		out[i] = bs[j]
		out[i].Bucket.Resize(now, l)
	}
	return out
}

// Limits is what the budgets other than a rate limit were made from (for
// Profiles); nil for none.
func (bs Budgets) Limits() []config.Limit {
	var ls []config.Limit
	for i := range bs {
		if !bs[i].PerHold() {
			ls = append(ls, config.Limit{Name: bs[i].Name, Max: bs[i].Bucket.Max(), Per: bs[i].Bucket.Per(), Admission: bs[i].Bucket.Admission()})
		}
	}
	return ls
}

// Levels calls f with the name, Max and level at now (negative for a
// bucket in debt) of each budget other than a rate limit.
func (bs Budgets) Levels(now int64, f func(name string, max, level int64)) {
	for i := range bs {
		if !bs[i].PerHold() {
			f(bs[i].Name, bs[i].Bucket.Max(), bs[i].Bucket.Level(now))
		}
	}
}

// Fits reports whether every budget covers cost at now, and, when not,
// whether one of them never will (the cost is above its Max).
func (bs Budgets) Fits(cost config.Cost, now int64) (ok, never bool) {
	ok = true
	for i := range bs {
		b, c := &bs[i].Bucket, bs[i].units(cost)
		if c > b.Max() {
			return false, true
		}
		if !b.Covers(now, c) {
			ok = false
		}
	}
	return ok, false
}

// Wait is how long after now every budget covers cost, if nothing else
// changes, or false if one never will.
func (bs Budgets) Wait(cost config.Cost, now int64) (time.Duration, bool) {
	var wait time.Duration
	for i := range bs {
		w, ok := bs[i].Bucket.Wait(now, bs[i].units(cost))
		if !ok {
			return 0, false
		}
		wait = max(wait, w)
	}
	return wait, true
}

// Take takes cost from every budget; they must cover it (Fits).
func (bs Budgets) Take(cost config.Cost, now int64) {
	for i := range bs {
		bs[i].Bucket.Take(now, bs[i].units(cost))
	}
}

// Rest is until when the resource must rest for its budgets: until each
// holds at least one unit (and so is out of debt), or 0 if each does now.
// A resource that is handed out therefore covers the default cost, 1 of
// each limit.
func (bs Budgets) Rest(now int64) int64 {
	var until int64
	for i := range bs {
		if w, _ := bs[i].Bucket.Wait(now, 1); w > 0 {
			until = max(until, after(now, w))
		}
	}
	return until
}

// FullAt is when the tightest budget is full again, as of now; 0 without
// budgets. Earlier means more budget left now, and, unlike a level, it
// does not move with time: a heap may order by it.
func (bs Budgets) FullAt(now int64) int64 {
	var at int64
	for i := range bs {
		b := &bs[i].Bucket
		w, _ := b.Wait(now, b.Max())
		at = max(at, after(now, w))
	}
	return at
}

// after is now + d, or math.MaxInt64 (never) past the range of int64.
func after(now int64, d time.Duration) int64 {
	if int64(d) >= maxInt64-now {
		return maxInt64
	}
	return now + int64(d)
}

const maxInt64 = 1<<63 - 1

// Rate is the limit of a rate (config.Config.RateLimit) of perSecond
// hand-outs a second up to burst, as a budget with no name (see Budget):
// Max burst (at least 1, at most config.MaxUnits) per Per =
// burst/perSecond seconds, rounded up to the nanosecond so that the rate
// is never above the one asked for. A Per past the longest time.Duration
// is that: the burst, and then in practice nothing more. A perSecond <= 0,
// NaN or +Inf is no limit: ok is false.
func Rate(perSecond float64, burst int) (l config.Limit, ok bool) {
	if !(perSecond > 0) || math.IsInf(perSecond, 1) {
		return config.Limit{}, false
	}
	size := min(int64(max(burst, 1)), config.MaxUnits)
	per := math.Ceil(float64(size) * 1e9 / perSecond)
	d := time.Duration(math.MaxInt64)
	if per < float64(math.MaxInt64) {
		d = time.Duration(max(per, 1))
	}
	return config.Limit{Max: size, Per: d}, true
}
