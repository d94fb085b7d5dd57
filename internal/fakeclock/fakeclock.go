// Package fakeclock is a config.Clock for tests: time moves only when the
// test advances it, and timers fire synchronously inside Advance, so tests
// of deadlines neither sleep nor race the clock.
package fakeclock

import (
	"sort"
	"sync"
	"time"

	"github.com/crsched/crs/config"
)

// Clock is a manually advanced clock. The zero value is not usable; call
// New.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*timer // pending, in creation order
	paused bool     // Advance moves time but fires nothing
}

type timer struct {
	c    *Clock
	at   time.Time
	f    func()
	done bool // fired or stopped; guarded by c.mu
}

// New returns a clock reading an arbitrary fixed instant.
func New() *Clock {
	return &Clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f to run, in the goroutine that advances the clock,
// once the clock reaches now+d.
func (c *Clock) AfterFunc(d time.Duration, f func()) config.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

// Stop cancels the timer if it has not fired.
func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	return true
}

// Advance moves the clock forward by d and runs, in deadline order, every
// timer that comes due, including timers that those callbacks create
// within the advanced span. Callbacks run without the clock's lock held.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var t *timer
		if !c.paused {
			t = c.nextDue(end)
		}
		if t == nil {
			c.now = end
			c.mu.Unlock()
			return
		}
		t.done = true
		if t.at.After(c.now) {
			c.now = t.at
		}
		c.mu.Unlock()
		t.f()
	}
}

// Pause makes Advance move time without firing timers, as if the timer
// goroutine were late; Resume undoes it (due timers fire at the next
// Advance).
func (c *Clock) Pause() {
	c.mu.Lock()
	c.paused = true
	c.mu.Unlock()
}

// Resume lets Advance fire timers again.
func (c *Clock) Resume() {
	c.mu.Lock()
	c.paused = false
	c.mu.Unlock()
}

// Pending is the number of timers that have neither fired nor been
// stopped.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.done {
			n++
		}
	}
	return n
}

// nextDue returns the earliest pending timer due by end, and drops
// finished timers. Requires c.mu.
func (c *Clock) nextDue(end time.Time) *timer {
	live := c.timers[:0]
	for _, t := range c.timers {
		if !t.done {
			live = append(live, t)
		}
	}
	c.timers = live
	sort.SliceStable(live, func(i, j int) bool { return live[i].at.Before(live[j].at) })
	if len(live) == 0 || live[0].at.After(end) {
		return nil
	}
	return live[0]
}
