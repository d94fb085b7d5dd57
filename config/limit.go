package config

import (
	"fmt"
	"sort"
	"time"

	crserrors "github.com/crsched/crs/errors"
)

// MaxUnits is the largest Limit.Max and the largest amount in a Cost:
// 2^53, the largest integer that a double holds exactly. Redis runs its
// scripts in Lua, whose numbers are doubles, so a larger amount would not
// mean the same in a pool kept in Redis as in one process.
const MaxUnits = 1 << 53

// Limit is a token bucket, the way OpenAI and Anthropic state their rate
// limits: at most Max units at once, refilled continuously at Max units per
// Per. A bucket starts full, so a resource can spend Max units at once and
// then Max per Per; no window of length t ever sees more than
// Max + Max*t/Per units spent.
//
// Name is the quantity the bucket counts ("requests", "tokens", ...) and
// the key a Cost uses for it. A call that spends more than a bucket holds
// is not granted until the bucket has refilled enough, and a call that
// spends more than Max can never be granted by that resource.
type Limit struct {
	// Name is the quantity counted; it must not be empty, and the limits
	// of one resource must have distinct names.
	Name string
	// Max is the bucket's size in units, in [1, MaxUnits].
	Max int64
	// Per is how long an empty bucket takes to refill to Max; it must be
	// positive.
	Per time.Duration
	// Admission says that the provider counts a call when it admits it,
	// a moment after the grant (the network, its queue), and starts
	// refilling its own bucket from then. A bucket of this limit that a
	// grant takes from full then refills only from the next answer on the
	// resource (Lease.Settle, Observe or Reconcile), by when the provider
	// has admitted a call, never from the grant: it never refills ahead
	// of the provider's, however long the first call took to arrive.
	// Feed such a resource its answers: without them, a bucket taken
	// from full does not refill.
	Admission bool
}

// Validate reports ErrInvalidLimit, wrapped with the limit's name, for an
// empty Name, a Max outside [1, MaxUnits] or a Per that is not positive.
func (l Limit) Validate() error {
	switch {
	case l.Name == "":
		return fmt.Errorf("%w: empty name", crserrors.ErrInvalidLimit)
	case l.Max < 1 || l.Max > MaxUnits:
		return fmt.Errorf("%w: %q has Max %d, want 1 to %d", crserrors.ErrInvalidLimit, l.Name, l.Max, int64(MaxUnits))
	case l.Per <= 0:
		return fmt.Errorf("%w: %q has Per %v, want a positive duration", crserrors.ErrInvalidLimit, l.Name, l.Per)
	}
	return nil
}

// ValidateLimits checks the limits of one resource: each must be valid
// (ErrInvalidLimit) and no two may share a Name (ErrDuplicateLimit). The
// error is the first problem found, in slice order, wrapped with the
// limit's name. No limits at all (nil or empty) is valid: no budget.
func ValidateLimits(limits []Limit) error {
	for i, l := range limits {
		if err := l.Validate(); err != nil {
			return err
		}
		for _, earlier := range limits[:i] {
			if earlier.Name == l.Name {
				return fmt.Errorf("%w: %q", crserrors.ErrDuplicateLimit, l.Name)
			}
		}
	}
	return nil
}

// Cost is what one call spends, in units per limit name: Cost{"tokens":
// 1200} spends 1200 of a "tokens" limit. A limit the cost does not name
// costs 1 per acquisition, so a "requests" limit needs no cost at all and
// a nil Cost spends 1 of every limit. An amount may be 0, which exempts
// the call from that limit.
//
// A name that a resource has no limit for is ignored by that resource, so
// one cost fits a pool that mixes resources with and without a "tokens"
// limit. Validate checks the amounts only; ValidateNames also rejects
// names that none of a set of limits has, which catches a misspelt name
// that would otherwise silently cost 1.
type Cost map[string]int64

// Of is the amount the cost spends of the limit called name: the amount
// it names, or 1 when it does not name it.
func (c Cost) Of(name string) int64 {
	if n, ok := c[name]; ok {
		return n
	}
	return 1
}

// Validate reports ErrInvalidCost, wrapped with the name, for an amount
// that is negative or above MaxUnits. Names are checked in sorted order,
// so that the error is the same from one call to the next.
func (c Cost) Validate() error {
	for _, name := range c.names() {
		if n := c[name]; n < 0 || n > MaxUnits {
			return fmt.Errorf("%w: %q is %d, want 0 to %d", crserrors.ErrInvalidCost, name, n, int64(MaxUnits))
		}
	}
	return nil
}

// ValidateNames is Validate, then ErrUnknownLimit, wrapped with the name,
// for a name that none of limits has.
func (c Cost) ValidateNames(limits []Limit) error {
	if err := c.Validate(); err != nil {
		return err
	}
	for _, name := range c.names() {
		known := false
		for _, l := range limits {
			if l.Name == name {
				known = true
				break
			}
		}
		if !known {
			return fmt.Errorf("%w: %q", crserrors.ErrUnknownLimit, name)
		}
	}
	return nil
}

func (c Cost) names() []string {
	names := make([]string, 0, len(c))
	for name := range c {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Tenant is what Config.Tenants gives a tenant. Weight is its share among
// the tenants waiting at one priority, against the others' weights: 0
// means 1. Limits are its own budgets (as a resource's: Limit), which
// every grant to the tenant spends from in the same step as the
// resource's, so that a team's budget is kept across every resource.
type Tenant struct {
	Weight int64
	Limits []Limit
}

// Validate reports ErrInvalidTenant, wrapped with the problem, for a
// Weight below 0 or above MaxUnits or invalid Limits (ValidateLimits).
func (t Tenant) Validate() error {
	if t.Weight < 0 || t.Weight > MaxUnits {
		return fmt.Errorf("%w: weight %d, want 0 to %d", crserrors.ErrInvalidTenant, t.Weight, int64(MaxUnits))
	}
	if err := ValidateLimits(t.Limits); err != nil {
		return fmt.Errorf("%w: %w", crserrors.ErrInvalidTenant, err)
	}
	return nil
}
