package config

import "strconv"

// AcquirePolicy decides what Acquire does with the resource it returns.
type AcquirePolicy int

const (
	// Shared leaves the acquired resource in the pool: many callers may use
	// it at once, and Release is not used.
	Shared AcquirePolicy = iota
	// Exclusive takes the acquired resource out of the pool until its
	// holder calls Release.
	Exclusive
)

func (p AcquirePolicy) valid() bool { return p == Shared || p == Exclusive }

// String returns "shared" or "exclusive".
func (p AcquirePolicy) String() string {
	switch p {
	case Shared:
		return "shared"
	case Exclusive:
		return "exclusive"
	}
	return "AcquirePolicy(" + strconv.Itoa(int(p)) + ")"
}
