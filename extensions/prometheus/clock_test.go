package prometheus_test

import (
	"sync"
	"time"

	"github.com/crsched/crs/config"
)

// manualClock is a config.Clock that moves only when a test advances it,
// so that lease deadlines pass without sleeping and every wait lasts
// exactly zero. Timers fire inside Advance, in the advancing goroutine.
type manualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
}

type manualTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func newManualClock() *manualClock {
	return &manualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) AfterFunc(d time.Duration, f func()) config.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return &stopper{c, t}
}

type stopper struct {
	c *manualClock
	t *manualTimer
}

func (s *stopper) Stop() bool {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	was := !s.t.stopped
	s.t.stopped = true
	return was
}

// Advance moves the clock by d and runs the timers that come due, earliest
// first, including those their callbacks arm within the span. Callbacks
// run without the clock's lock, since they call Now and AfterFunc.
func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var next *manualTimer
		for _, t := range c.timers {
			if !t.stopped && !t.at.After(end) && (next == nil || t.at.Before(next.at)) {
				next = t
			}
		}
		if next == nil {
			c.now = end
			c.mu.Unlock()
			return
		}
		next.stopped = true // fired
		c.now = next.at
		c.mu.Unlock()
		next.f()
	}
}
