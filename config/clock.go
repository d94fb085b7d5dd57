package config

import "time"

// Clock is the scheduler's source of time, for lease deadlines and wait
// times. The default is the system clock; tests substitute one they
// advance by hand, so that nothing has to sleep.
type Clock interface {
	// Now returns the current time. Only differences between results are
	// used, so a monotonic reading is enough.
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has elapsed, unless
	// the returned Timer is stopped first, like time.AfterFunc.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call if it has not started, and reports whether
	// it did.
	Stop() bool
}

// SystemClock is the Clock of package time.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (SystemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
