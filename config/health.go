package config

import (
	"math"
	"time"

	crserrors "github.com/crsched/crs/errors"
)

// Ejection takes a resource that keeps failing out of the pool for a
// while, for longer each time, the way Envoy's outlier detection does.
// A failure is reported with Lease.Fail; a plain release is a success.
// The zero value turns ejection off.
type Ejection struct {
	// ConsecutiveFailures is how many failures in a row eject a resource;
	// 0 turns ejection off. A success resets the count.
	ConsecutiveFailures int
	// BaseTime is the length of a resource's first ejection; its n-th
	// ejection lasts n x BaseTime. Required when ejection is on.
	BaseTime time.Duration
	// MaxTime caps the length of an ejection; 0 means no cap.
	MaxTime time.Duration
	// MaxEjectedShare caps the share of resources ejected at once, in
	// [0, 1]; 0 means no cap beyond the rule that ejection never takes
	// the last resource that is neither ejected nor excluded.
	MaxEjectedShare float64
}

// Enabled reports whether ejection is on.
func (e Ejection) Enabled() bool { return e.ConsecutiveFailures > 0 }

// Validate reports ErrInvalidEjection for negative counts or durations, a
// share outside [0, 1], or ejection on without a BaseTime.
func (e Ejection) Validate() error {
	switch {
	case e.ConsecutiveFailures < 0, e.BaseTime < 0, e.MaxTime < 0,
		e.MaxEjectedShare < 0, e.MaxEjectedShare > 1, e.MaxEjectedShare != e.MaxEjectedShare,
		e.Enabled() && e.BaseTime == 0:
		return crserrors.ErrInvalidEjection
	}
	return nil
}

// Duration is the length of a resource's n-th ejection (n >= 1): n x
// BaseTime, capped at MaxTime, and at the longest time.Duration where
// the product overflows (an ejection that long lasts until Include).
func (e Ejection) Duration(n int) time.Duration {
	d := e.BaseTime * time.Duration(n)
	if d/time.Duration(n) != e.BaseTime {
		d = math.MaxInt64 // overflowed
	}
	if e.MaxTime > 0 && d > e.MaxTime {
		d = e.MaxTime
	}
	return d
}
