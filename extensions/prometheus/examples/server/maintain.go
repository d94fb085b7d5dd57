package main

import (
	"context"
	"errors"
	"time"

	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/scheduler"
)

// maintain plays an operator who takes one upstream out of the pool at a
// time, every period, in name order, so that the excluded state shows on
// the dashboard. An upstream that is not active (every slot taken) is
// skipped until the next turn. When ctx ends the last one is put back.
func maintain(ctx context.Context, sched *scheduler.Scheduler[*upstream, string], names []string, period time.Duration) error {
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	out := "" // the upstream under maintenance
	putBack := func() error {
		if out == "" {
			return nil
		}
		err := sched.Include(out)
		out = ""
		return err
	}
	for next := 0; ; next = (next + 1) % len(names) {
		select {
		case <-ctx.Done():
			return putBack()
		case <-ticker.C:
		}
		if err := putBack(); err != nil {
			return err
		}
		switch err := sched.Exclude(names[next]); {
		case err == nil:
			out = names[next]
		case !errors.Is(err, crserrors.ErrResourceNotActive):
			return err
		}
	}
}
