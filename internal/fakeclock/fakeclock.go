// Package fakeclock is a config.Clock for tests: time moves only when the
// test advances it, and timers fire synchronously inside Advance, so tests
// of deadlines neither sleep nor race the clock.
//
// Advance moves the clock from one timer's instant to the next, firing
// each timer with the clock at its instant. Step is for concurrent
// histories (the verify module's checks): it moves the clock in one step
// and then fires the timers that came due, as a late timer goroutine
// would, and Freeze lets a call read the clock on one side of a step.
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
	paused bool     // Advance and Step move time but fire nothing
	// stepped is the furthest instant a Step has reached: a timer due by
	// then has started, and Stop no longer cancels it.
	stepped time.Time
	// frozen is held for reading by Freeze and for writing by a Step
	// while it moves the time.
	frozen sync.RWMutex
	// stepping serialises Steps: each fires every timer its step made
	// due before the next one steps.
	stepping sync.Mutex
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

// Stop cancels the timer if it has not fired, and no Step has passed its
// instant.
func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.done || !t.at.After(t.c.stepped) {
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

// Step moves the clock forward by d in one step, then runs, in deadline
// order, every timer that is due, including those that their callbacks
// or other goroutines create due meanwhile, before it returns. Unlike
// Advance, it leaves the clock at now+d while the timers fire, as a timer
// goroutine that runs late sees it, so a goroutine running beside Step
// reads the time before the step or after it, never at a timer's instant
// in between. And a timer whose instant a Step has passed has started, as
// a time.AfterFunc timer has once its instant passes: Stop no longer
// cancels it, and it fires in that Step (or, paused, in the first Step
// after Resume).
//
// stepped (if not nil) runs at the step, before any other goroutine can
// read the new time; it must not use the clock. Steps run one at a time,
// and wait for every Freeze to thaw.
func (c *Clock) Step(d time.Duration, stepped func()) {
	c.stepping.Lock()
	defer c.stepping.Unlock()
	c.frozen.Lock()
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.stepped = c.now
	if stepped != nil {
		stepped()
	}
	c.mu.Unlock()
	c.frozen.Unlock()
	for {
		c.mu.Lock()
		var t *timer
		if !c.paused {
			t = c.nextDue(c.now)
		}
		if t == nil {
			c.mu.Unlock()
			return
		}
		t.done = true
		c.mu.Unlock()
		t.f()
	}
}

// Freeze keeps Step from moving the clock until thaw is called, so that
// a call that reads the clock more than once (for a deadline, then to arm
// its timer) reads it on one side of a step. Freezes may overlap; they do
// not hold back Advance. A goroutine must not Freeze twice before it
// thaws: a Step waiting in between would wait for ever.
func (c *Clock) Freeze() (thaw func()) {
	c.frozen.RLock()
	return c.frozen.RUnlock
}

// Pause makes Advance and Step move time without firing timers, as if
// the timer goroutine were late; Resume undoes it (due timers fire at the
// next Advance or Step).
func (c *Clock) Pause() {
	c.mu.Lock()
	c.paused = true
	c.mu.Unlock()
}

// Resume lets Advance and Step fire timers again.
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
	clear(c.timers[len(live):])
	c.timers = live
	sort.SliceStable(live, func(i, j int) bool { return live[i].at.Before(live[j].at) })
	if len(live) == 0 || live[0].at.After(end) {
		return nil
	}
	return live[0]
}
