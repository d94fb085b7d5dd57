package scheduler

import (
	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/budget"
)

// limitsOf runs the user's RateLimit and Limits functions, outside any
// lock, checks what they return, and returns the limits of v's budgets:
// its rate limit, as a limit with no name (budget.Rate), then its Limits.
// nil when it has neither.
func (s *Scheduler[T, ID]) limitsOf(v T) ([]config.Limit, error) {
	var limits []config.Limit
	if s.rateLimit != nil {
		if l, ok := budget.Rate(s.rateLimit(v)); ok {
			limits = append(limits, l)
		}
	}
	if s.limits == nil {
		return limits, nil
	}
	ls := s.limits(v)
	if err := config.ValidateLimits(ls); err != nil {
		return nil, err
	}
	return append(limits, ls...), nil
}
