package model

import (
	"sort"
	"sync"
	"time"

	"github.com/crsched/crs/config"
)

// stepClock is the config.Clock the checks run the scheduler on. Time
// moves only in Advance, in one step; the timers that came due then fire,
// one after another, in the goroutine that advanced the clock, before
// Advance returns, as a timer goroutine that runs late would.
//
// It differs from internal/fakeclock, which fires each timer with the
// clock set to the timer's instant, in two ways that concurrent histories
// need. A call running beside an Advance reads the clock either before
// the step or after it, never at a timer's instant in between, so that
// the model can place it before or after the step. And a timer whose
// instant the step has passed has started, as a time.AfterFunc timer
// has once its instant passes: Stop no longer cancels it, and it fires
// in the Advance. (Were it cancelled, the scheduler's re-arming of its
// single timer to an earlier deadline, which stops the old timer and
// then starts a new one, could leave the due deadlines to the next
// Advance if it ran while Advance looked for due timers.)
type stepClock struct {
	// setting is held for reading by a call that sets a deadline, which
	// reads the clock twice (to compute the deadline, and to arm the
	// timer for it), and for writing by the step, so that both readings
	// fall on one side of it: otherwise the timer could be armed a step
	// late.
	setting sync.RWMutex
	mu      sync.Mutex
	now     time.Time // guarded by mu
	timers  []*stepTimer
	// firing serialises Advance calls: each one fires every timer its
	// step made due before the next one steps.
	firing sync.Mutex
}

type stepTimer struct {
	c    *stepClock
	at   time.Time
	f    func()
	done bool // fired or stopped; guarded by c.mu
}

func newStepClock() *stepClock {
	return &stepClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// Now returns the clock's reading.
func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f to run in an Advance once the clock reaches now+d.
func (c *stepClock) AfterFunc(d time.Duration, f func()) config.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &stepTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

// Stop cancels the timer unless it has fired or come due.
func (t *stepTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.done || !t.at.After(t.c.now) {
		return false
	}
	t.done = true
	return true
}

// Advance moves the clock forward by d in one step, then fires the due
// timers in deadline order, including those that their callbacks or
// other goroutines create due meanwhile. Callbacks run without the
// clock's lock held. stepped (if not nil) runs at the step, before any
// other goroutine can read the new time; it must not use the clock.
func (c *stepClock) Advance(d time.Duration, stepped func()) {
	c.firing.Lock()
	defer c.firing.Unlock()
	c.step(d, stepped)
	for {
		c.mu.Lock()
		t := c.nextDue()
		if t == nil {
			c.mu.Unlock()
			return
		}
		t.done = true
		c.mu.Unlock()
		t.f()
	}
}

// step moves the clock forward by d, calls stepped (if not nil), and
// fires nothing.
func (c *stepClock) step(d time.Duration, stepped func()) {
	c.setting.Lock()
	defer c.setting.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	if stepped != nil {
		stepped()
	}
}

// nextDue returns the earliest pending timer that is due, and drops the
// finished ones. Requires c.mu.
func (c *stepClock) nextDue() *stepTimer {
	live := c.timers[:0]
	for _, t := range c.timers {
		if !t.done {
			live = append(live, t)
		}
	}
	clear(c.timers[len(live):])
	c.timers = live
	sort.SliceStable(live, func(i, j int) bool { return live[i].at.Before(live[j].at) })
	if len(live) == 0 || live[0].at.After(c.now) {
		return nil
	}
	return live[0]
}
