package scheduler

import (
	"github.com/crsched/crs/config"
)

// limitsOf runs the user's Limits function, outside any lock, and checks
// what it returns.
func (s *Scheduler[T, ID]) limitsOf(v T) ([]config.Limit, error) {
	limits := s.limits(v)
	if err := config.ValidateLimits(limits); err != nil {
		return nil, err
	}
	return limits, nil
}
