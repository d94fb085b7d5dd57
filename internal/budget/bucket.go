// Package budget is every limit of the core, under one word: a Bucket is
// the token-bucket arithmetic behind a config.Limit (at most Max units at
// once, refilled continuously at Max units per Per); a Budget is one
// named Bucket of a resource, and Budgets all of them, with what a grant
// asks of them (Fits, Take, Wait, Rest); Profiles counts a pool's
// resources by their limits, to refuse a cost that none can ever cover.
//
//	bs := budget.NewBucket(limits, now, born)
//	if ok, never := bs.Fits(cost, now); ok {
//		bs.Take(cost, now)
//	}
//
// A Bucket is a plain value with no lock and no clock: its owner guards it
// (the core, under the lock of the shard that holds the resource) and
// passes the time in, in nanoseconds, to every call that depends on it, so
// that a test can drive it with any clock reading, and so that the same
// arithmetic serves the core and the load test. Only differences between
// readings are used; a reading may be anywhere in the int64 range.
//
// The arithmetic is exact: the level is kept as a whole number of units
// plus a remainder in units of 1/Per, and refills, waits and clamps use
// 128-bit intermediate products, so no sequence of calls gains or loses a
// fraction of a unit to rounding (Resize alone rounds, down, when it
// rescales the remainder to a new Per). Where a true result does not fit (a wait
// longer than the longest time.Duration, a debt below -math.MaxInt64) it
// saturates instead of wrapping.
package budget

import (
	"math"
	"math/bits"
	"time"

	"github.com/crsched/crs/config"
)

// minWhole is the deepest debt a bucket records: a settlement that would
// go lower saturates here, so that no later sum can wrap around.
const minWhole = -math.MaxInt64

// Never is the longest time.Duration: the wait Wait reports, with ok
// false, for a cost that the bucket can never cover, and, with ok true,
// for one it will cover only after longer than a Duration can hold.
const Never = time.Duration(math.MaxInt64)

// Bucket is one limit's state. The zero value is not usable; call New.
//
// The level is whole + frac/per units. Invariants: 0 <= frac < per;
// minWhole <= whole; and the level is at most max, so either whole < max,
// or whole == max and frac == 0. A negative level is a debt, left by a
// settlement larger than its estimate.
type Bucket struct {
	max   int64  // units, >= 1
	per   uint64 // nanoseconds to refill from empty to max, >= 1
	whole int64  // the level's floor, in units
	frac  uint64 // the level's remainder, in units of 1/per
	last  int64  // the clock reading the level was last brought up to
	// admission is config.Limit.Admission; held says that a Take from
	// full was not yet followed by Admitted: the level does not refill.
	admission, held bool
}

// NewBucket returns a full bucket for l, as of the clock reading now. l must be
// valid (config.Limit.Validate); NewBucket panics otherwise, since that is a bug
// in the caller, not bad input.
func NewBucket(l config.Limit, now int64) Bucket {
	if l.Max < 1 || l.Per < 1 {
		panic("budget: NewBucket with an invalid limit")
	}
	return Bucket{max: l.Max, per: uint64(l.Per), whole: l.Max, last: now, admission: l.Admission}
}

// Admitted says that an answer came from the provider at now: it has
// admitted a call since the bucket was taken from full, and so refills
// its own bucket from now at the latest. A bucket of a limit counted at
// admission (config.Limit.Admission) refills from now; any other is
// unchanged.
func (b *Bucket) Admitted(now int64) {
	if b.held {
		b.Refill(now)
		b.held = false
	}
}

// Max is the bucket's size, in units.
func (b *Bucket) Max() int64 { return b.max }

// Admission is the limit's config.Limit.Admission.
func (b *Bucket) Admission() bool { return b.admission }

// Per is how long the bucket takes to refill from empty to Max.
func (b *Bucket) Per() time.Duration { return time.Duration(b.per) }

// Refill brings the level up to the clock reading now: it adds
// (now - last) x Max / Per units, up to Max. A reading at or before the
// last one adds nothing and is otherwise ignored, so a clock that steps
// back never counts the same span twice. Every other method that takes
// now refills first; calling Refill alone is never required.
func (b *Bucket) Refill(now int64) {
	if now <= b.last {
		return
	}
	// The true difference is in [1, 2^64), so the unsigned one is exact
	// even with readings at both ends of the int64 range.
	elapsed := uint64(now) - uint64(b.last)
	b.last = now
	if b.whole == b.max || b.held {
		return
	}
	hi, lo := bits.Mul64(elapsed, uint64(b.max))
	if hi >= b.per { // the quotient would not fit in 64 bits: far past full
		b.fill()
		return
	}
	q, r := bits.Div64(hi, lo, b.per)
	// room is max - whole, in [1, 2^64-2] by the invariants; q units or
	// more fill the bucket whatever the remainder.
	if room := uint64(b.max) - uint64(b.whole); q >= room {
		b.fill()
		return
	}
	b.whole = int64(uint64(b.whole) + q)
	b.frac += r // < 2*per, which fits: per <= math.MaxInt64
	if b.frac >= b.per {
		b.frac -= b.per
		b.whole++
		if b.whole == b.max {
			b.frac = 0
		}
	}
}

func (b *Bucket) fill() { b.whole, b.frac = b.max, 0 }

// Covers reports whether the level, brought up to now, is at least cost.
// A negative cost is never covered, and no cost is covered while the
// bucket is in debt, not even 0: a resource in debt rests until it is
// repaid.
func (b *Bucket) Covers(now, cost int64) bool {
	b.Refill(now)
	// With 0 <= frac/per < 1 and cost an integer, whole + frac/per >= cost
	// exactly when whole >= cost.
	return cost >= 0 && b.whole >= cost
}

// Take takes cost from the level if it covers it (Covers), and reports
// whether it did; a refused Take changes nothing but the refill.
func (b *Bucket) Take(now, cost int64) bool {
	if !b.Covers(now, cost) {
		return false
	}
	if b.admission && cost > 0 && b.whole == b.max {
		b.held = true // the provider's bucket starts refilling when it admits the call
	}
	b.whole -= cost
	return true
}

// Settle replaces an estimate taken earlier by what the call actually
// spent: it refunds estimate - actual when the call spent less (up to
// Max: a bucket never holds more), and takes actual - estimate more when
// it spent more, which may leave the bucket in debt. A debt deeper than
// -math.MaxInt64 units is recorded as that. Negative amounts are invalid
// input (config.Cost.Validate rejects them) and change nothing.
func (b *Bucket) Settle(now, estimate, actual int64) {
	if estimate < 0 || actual < 0 {
		return
	}
	b.Refill(now)
	switch {
	case actual < estimate:
		b.add(uint64(estimate - actual))
	case actual > estimate:
		b.sub(uint64(actual - estimate))
	}
}

// add adds n units, up to max.
func (b *Bucket) add(n uint64) {
	// With a remainder below one unit, whole + frac/per + n >= max exactly
	// when n >= max - whole.
	if n >= uint64(b.max)-uint64(b.whole) {
		b.fill()
		return
	}
	b.whole = int64(uint64(b.whole) + n)
}

// sub takes n units, down to minWhole.
func (b *Bucket) sub(n uint64) {
	if uint64(b.whole)+math.MaxInt64 < n { // whole - minWhole < n
		b.whole, b.frac = minWhole, 0
		return
	}
	b.whole = int64(uint64(b.whole) - n)
}

// Wait is how long after now the level, refilling, first covers cost:
// 0 if it does already, the exact nanosecond otherwise (counted from the
// last reading when now is before it, since nothing refills until then) (a Covers at
// now + wait is true, at now + wait - 1 false, if nothing else happens to
// the bucket in between). Wait(now, 0) is the time until a debt is
// repaid. A wait longer than the longest time.Duration is reported as
// that. A cost above Max, or negative, can never be covered: Wait returns
// Never and false.
func (b *Bucket) Wait(now, cost int64) (wait time.Duration, ok bool) {
	if cost < 0 || cost > b.max {
		return Never, false
	}
	b.Refill(now)
	if b.whole >= cost {
		return 0, true
	}
	// A reading before the last one refills nothing until the clock is
	// back at the last: the wait starts from there.
	var behind uint64
	if now < b.last {
		behind = uint64(b.last) - uint64(now)
	}
	// The deficit is (cost - whole) - frac/per units, that is
	// (cost - whole) x per - frac in units of 1/per, and the bucket gains
	// max of those per nanosecond. cost - whole is in [1, 2^64-2].
	hi, lo := bits.Mul64(uint64(cost)-uint64(b.whole), b.per)
	lo, borrow := bits.Sub64(lo, b.frac, 0)
	hi -= borrow
	if hi >= uint64(b.max) { // at least 2^64 nanoseconds
		return Never, true
	}
	q, r := bits.Div64(hi, lo, uint64(b.max))
	if q >= math.MaxInt64 {
		return Never, true
	}
	if r != 0 {
		q++ // the ceiling
	}
	if behind >= math.MaxInt64-q {
		return Never, true
	}
	return time.Duration(q + behind), true
}

// Level is the whole number of units the bucket holds at now (the floor
// of the level): what a provider would report as remaining. It is
// negative while the bucket is in debt.
func (b *Bucket) Level(now int64) int64 {
	b.Refill(now)
	return b.whole
}

// Clamp lowers the level to what a provider reports at now: remaining
// units left, and its bucket back to full after reset. The level becomes
// at most remaining, and at most Max - reset x Max / Per (the level from
// which this bucket would refill to full exactly when the provider's
// does), so that the bucket never believes it has more than the provider
// says, now or as both refill. It never raises the level: a provider that
// reports more has not yet seen the calls whose estimates this bucket has
// taken. A negative reset counts as 0; a bound below -math.MaxInt64
// counts as that.
//
// The figures are only as fresh as the response that carried them: calls
// the provider had not yet received when it answered make it report more
// than it will have, so Clamp corrects a bucket that drifted from the
// provider's but cannot by itself keep the two equal.
func (b *Bucket) Clamp(now, remaining int64, reset time.Duration) {
	b.Refill(now)
	if remaining < minWhole {
		remaining = minWhole
	}
	b.lower(remaining, 0)
	if reset < 0 {
		reset = 0
	}
	hi, lo := bits.Mul64(uint64(reset), uint64(b.max))
	if hi >= b.per { // reset x max / per does not even fit in 64 bits
		b.lower(minWhole, 0)
		return
	}
	q, r := bits.Div64(hi, lo, b.per)
	// The bound is max - q - r/per; below minWhole when q > max - minWhole
	// (or equal to it with a remainder).
	span := uint64(b.max) + math.MaxInt64 // max - minWhole
	if q > span || (q == span && r != 0) {
		b.lower(minWhole, 0)
		return
	}
	whole, frac := int64(uint64(b.max)-q), uint64(0)
	if r != 0 {
		whole, frac = whole-1, b.per-r
	}
	b.lower(whole, frac)
}

// Raise lifts the level, brought up to now, to level units if it is
// below that, and never above Max: for a provider's figure that shows
// more left than the bucket holds once what it cannot have counted yet
// is taken off (see scheduler's Lease.Reconcile). It never lowers.
func (b *Bucket) Raise(now, level int64) {
	b.Refill(now)
	if level >= b.max {
		b.fill()
		return
	}
	if level > b.whole {
		b.whole, b.frac = level, 0
	}
}

// lower sets the level to whole + frac/per if that is lower.
func (b *Bucket) lower(whole int64, frac uint64) {
	if whole < b.whole || (whole == b.whole && frac < b.frac) {
		b.whole, b.frac = whole, frac
	}
}

// Resize gives the bucket a new Max and Per, for a limit changed while the
// resource is in use: the level is brought up to now at the old rate and
// kept, cut to the new Max if it is above it, so a larger Max is reached
// by refilling, not granted at once. The remainder is rescaled to the new
// Per, rounding down. l must be valid; Resize panics otherwise, as New.
func (b *Bucket) Resize(now int64, l config.Limit) {
	if l.Max < 1 || l.Per < 1 {
		panic("budget: Resize with an invalid limit")
	}
	b.Refill(now)
	b.admission = l.Admission
	b.held = b.held && l.Admission
	per := uint64(l.Per)
	hi, lo := bits.Mul64(b.frac, per)
	b.frac, _ = bits.Div64(hi, lo, b.per) // hi < b.per, since frac < b.per
	b.max, b.per = l.Max, per
	if b.whole >= b.max {
		b.fill()
	}
}
