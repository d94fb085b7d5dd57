package cooldown

import (
	"sync"
	"time"
)

// fakeClock replaces time.AfterFunc: timers fire only when the test calls
// fireAll, so tests control cooldown expiry without waiting.
type fakeClock struct {
	mu     sync.Mutex
	timers []*fakeTimer
}

type fakeTimer struct {
	clock    *fakeClock
	duration time.Duration
	callback func()
	stopped  bool
	fired    bool
}

func (c *fakeClock) afterFunc(d time.Duration, f func()) stopper {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{clock: c, duration: d, callback: f}
	c.timers = append(c.timers, t)
	return t
}

// Stop has time.Timer's contract: it reports whether it prevented the
// callback from running.
func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	if t.stopped || t.fired {
		return false
	}
	t.stopped = true
	return true
}

// pending returns the timers neither stopped nor fired.
func (c *fakeClock) pending() []*fakeTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*fakeTimer
	for _, t := range c.timers {
		if !t.stopped && !t.fired {
			out = append(out, t)
		}
	}
	return out
}

// fireAll runs the callbacks of all pending timers, as if their duration
// had passed, and returns how many it ran.
func (c *fakeClock) fireAll() int {
	c.mu.Lock()
	var due []*fakeTimer
	for _, t := range c.timers {
		if !t.stopped && !t.fired {
			t.fired = true
			due = append(due, t)
		}
	}
	c.mu.Unlock()
	for _, t := range due {
		t.callback()
	}
	return len(due)
}

// all returns every timer ever armed, in arming order.
func (c *fakeClock) all() []*fakeTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*fakeTimer(nil), c.timers...)
}

// newTestManager returns a Manager whose timers are driven by the
// returned clock.
func newTestManager[ID comparable](controller LifecycleController[ID], d time.Duration) (*Manager[ID], *fakeClock) {
	m := NewManager(controller, d)
	clock := &fakeClock{}
	m.afterFunc = clock.afterFunc
	return m, clock
}

// recordingController records the calls the Manager makes, in order.
type recordingController struct {
	mu         sync.Mutex
	calls      []string
	excludeErr error
}

func (c *recordingController) Exclude(id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, "exclude "+id)
	return c.excludeErr
}

func (c *recordingController) Include(id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, "include "+id)
	return nil
}

func (c *recordingController) recorded() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}
