package budget

import (
	"slices"
	"time"

	"github.com/crsched/crs/config"
)

// Budget is one limit of a resource: its name, from config.Limit, and its
// bucket.
type Budget struct {
	Name   string
	Bucket Bucket
	// Born is the resource's lease token count when the bucket was made:
	// leases with a token above it paid into it, the others (granted
	// before an Update added the limit) did not, so their settlement
	// leaves it alone.
	Born uint64
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

// Limits is what the budgets were made from (for Profiles); nil for none.
func (bs Budgets) Limits() []config.Limit {
	if len(bs) == 0 {
		return nil
	}
	ls := make([]config.Limit, len(bs))
	for i, b := range bs {
		ls[i] = config.Limit{Name: b.Name, Max: b.Bucket.Max(), Per: b.Bucket.Per()}
	}
	return ls
}

// Fits reports whether every budget covers cost at now, and, when not,
// whether one of them never will (the cost is above its Max).
func (bs Budgets) Fits(cost config.Cost, now int64) (ok, never bool) {
	ok = true
	for i := range bs {
		b, c := &bs[i].Bucket, cost.Of(bs[i].Name)
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
		w, ok := bs[i].Bucket.Wait(now, cost.Of(bs[i].Name))
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
		bs[i].Bucket.Take(now, cost.Of(bs[i].Name))
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
