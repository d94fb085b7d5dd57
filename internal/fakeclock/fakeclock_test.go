package fakeclock

import (
	"runtime"
	"slices"
	"testing"
	"time"
)

// Step moves the time at once: the timers it makes due fire in deadline
// order, each reading the end of the step, and a later one stays pending.
func TestStepFiresDueTimersInOrderAtTheStepsEnd(t *testing.T) {
	c := New()
	start := c.Now()
	var fired []time.Duration
	var seen []time.Time
	for _, d := range []time.Duration{2 * time.Second, time.Second, 5 * time.Second} {
		c.AfterFunc(d, func() {
			fired = append(fired, d)
			seen = append(seen, c.Now())
		})
	}
	steps := 0
	c.Step(3*time.Second, func() { steps++ })
	if want := []time.Duration{time.Second, 2 * time.Second}; !slices.Equal(fired, want) {
		t.Fatalf("fired %v, want %v", fired, want)
	}
	end := start.Add(3 * time.Second)
	for i, at := range seen {
		if !at.Equal(end) {
			t.Errorf("timer %d read %v, want the step's end %v", i, at, end)
		}
	}
	if steps != 1 {
		t.Errorf("stepped ran %d times, want 1", steps)
	}
	if p := c.Pending(); p != 1 {
		t.Errorf("%d timers pending, want 1", p)
	}
}

// A timer that a timer's callback arms due fires in the same Step.
func TestStepFiresTimersItsCallbacksMakeDue(t *testing.T) {
	c := New()
	fired := false
	c.AfterFunc(time.Second, func() { c.AfterFunc(0, func() { fired = true }) })
	c.Step(time.Second, nil)
	if !fired {
		t.Fatal("a timer armed due by a callback did not fire in the Step")
	}
}

// A timer whose instant a Step has passed has started: Stop does not
// cancel it, and it fires at the first Step that may fire. Advance, paused,
// leaves such a timer cancellable.
func TestStopDoesNotCancelATimerAStepHasPassed(t *testing.T) {
	c := New()
	c.Pause()
	fired := false
	passed := c.AfterFunc(time.Second, func() { fired = true })
	ahead := c.AfterFunc(2*time.Second, func() { t.Error("a stopped timer fired") })
	c.Step(time.Second, nil)
	if passed.Stop() {
		t.Error("Stop cancelled a timer a Step had passed")
	}
	if !ahead.Stop() {
		t.Error("Stop did not cancel a timer no Step had reached")
	}
	c.Resume()
	c.Step(0, nil)
	if !fired {
		t.Error("a timer a paused Step passed did not fire at the next Step")
	}

	c = New()
	c.Pause()
	late := c.AfterFunc(time.Second, func() { t.Error("a stopped timer fired") })
	c.Advance(time.Second)
	if !late.Stop() {
		t.Error("Stop did not cancel a timer only Advance had passed")
	}
	c.Resume()
	c.Advance(0)
}

// Step waits for every Freeze to thaw before it moves the time.
func TestFreezeHoldsBackStep(t *testing.T) {
	c := New()
	start := c.Now()
	thaw := c.Freeze()
	done := make(chan struct{})
	go func() {
		c.Step(time.Second, nil)
		close(done)
	}()
	// Wait until the Step waits for the freeze: a waiting writer makes
	// TryRLock fail.
	for c.frozen.TryRLock() {
		c.frozen.RUnlock()
		runtime.Gosched()
	}
	if now := c.Now(); !now.Equal(start) {
		t.Fatalf("the clock read %v while frozen, want %v", now, start)
	}
	thaw()
	<-done
	if now := c.Now(); !now.Equal(start.Add(time.Second)) {
		t.Fatalf("the clock read %v after the thaw, want %v", now, start.Add(time.Second))
	}
}
