package scheduler

import (
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/shard"
)

// count adds an ended hold to the health totals.
func (s *Scheduler[T, ID]) count(end shard.Ending, event events.EventType) {
	if end.How == shard.Failed {
		s.totals.failures.Add(1)
	}
	switch event {
	case events.EventEject:
		s.totals.ejections.Add(1)
	case events.EventSuspend:
		s.totals.suspensions.Add(1)
	}
}
