package mockprovider

import "time"

// maxPerMinute is the largest limit the mock accepts: its limiter keeps
// the level exactly, as units x nanoseconds in an int64, and a level plus
// a refill must fit.
const maxPerMinute = (1<<63 - 1) / int64(time.Minute) / 2

// limiter is the mock's own token bucket, written apart from crs's
// internal/bucket on purpose, so that the mock can referee crs: max units
// at once, refilled continuously at max per minute, starting full. It
// never goes into debt: it only takes what it covers, and only refunds.
//
// The level is kept as units x time.Minute (in nanoseconds), which makes
// a refill of elapsed x max exact. Guarded by the Provider's mutex.
type limiter struct {
	max    int64
	scaled int64 // the level, in units x time.Minute; 0 <= scaled <= max x time.Minute
	last   time.Time
}

func newLimiter(max int64, now time.Time) *limiter {
	return &limiter{max: max, scaled: max * int64(time.Minute), last: now}
}

func (l *limiter) full() int64 { return l.max * int64(time.Minute) }

// refill brings the level up to now; a clock that steps back adds nothing.
func (l *limiter) refill(now time.Time) {
	d := now.Sub(l.last)
	if d <= 0 {
		return
	}
	l.last = now
	if d >= time.Minute { // an empty bucket refills in a minute
		l.scaled = l.full()
		return
	}
	l.scaled = min(l.scaled+int64(d)*l.max, l.full())
}

func (l *limiter) covers(n int64) bool { return l.scaled >= n*int64(time.Minute) }

func (l *limiter) take(n int64) { l.scaled -= n * int64(time.Minute) }

func (l *limiter) refund(n int64) { l.scaled = min(l.scaled+n*int64(time.Minute), l.full()) }

// settle replaces an estimate taken by what the call used: the unused
// part is refunded; an overrun is taken, down to an empty bucket at most
// (the mock never goes into debt: a provider lets the call finish).
func (l *limiter) settle(estimate, used int64) {
	if used <= estimate {
		l.refund(estimate - used)
		return
	}
	l.scaled = max(l.scaled-(used-estimate)*int64(time.Minute), 0)
}

// resize gives the bucket a new size, as of now: the level is kept, cut
// to the new size.
func (l *limiter) resize(max int64, now time.Time) {
	l.refill(now)
	l.max = max
	l.scaled = min(l.scaled, l.full())
}

// remaining is the whole units left.
func (l *limiter) remaining() int64 { return l.scaled / int64(time.Minute) }

// wait is how long until the level covers n (n <= max), to the nanosecond.
func (l *limiter) wait(n int64) time.Duration {
	deficit := n*int64(time.Minute) - l.scaled
	if deficit <= 0 {
		return 0
	}
	return time.Duration((deficit + l.max - 1) / l.max)
}

// reset is how long until the bucket is full again.
func (l *limiter) reset() time.Duration { return l.wait(l.max) }
