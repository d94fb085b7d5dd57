package loadtest

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/scheduler"
)

// crsHealth is every call the harness makes to rest a resource or report
// a failure, on the scheduler's own health features, which rest a
// resource in the same step as its release, so that no other caller can
// take it in between:
//
//   - a cooldown after every release is config.Config.ReleaseCooldown:
//     no call at all;
//   - a failed backend call first suspends the resource with -suspend
//     (Scheduler.Suspend: a held resource takes no new holder, and rests
//     once its last holder releases), then ends the hold with Lease.Fail
//     under -api lease, which counts a failure toward
//     config.Config.Ejection (-eject), or with the plain release
//     otherwise;
//   - at the end, Include brings back every resource still resting, so
//     that the accounting sees all of them active;
//   - the calls made are counted, for the accounting to check the
//     scheduler's Stats.Failures, Suspensions and Ejections against.
type crsHealth struct {
	s         *scheduler.Scheduler[*backend, int]
	resources int
	suspend   time.Duration
	leases    bool

	fails, suspends, includes atomic.Uint64
	// finishErr is the first unexpected refusal of Include at the end.
	finishErr error
}

func (h *crsHealth) configure(c *config.Config[*backend, int], cfg Config) {
	h.resources, h.suspend, h.leases = cfg.Resources, cfg.Suspend, cfg.API == "lease"
	c.ReleaseCooldown = cfg.Cooldown
	c.Ejection = cfg.Ejection()
}

// end ends the acquisition a, with release for one that did not fail.
// A refused Suspend is returned (after the release), so that it counts
// as a failed release and fails the accounting.
func (h *crsHealth) end(a *crsHandle, failed bool, release func(*crsHandle) error) error {
	if !failed {
		return release(a)
	}
	var suspendErr error
	if h.suspend > 0 {
		if suspendErr = h.s.Suspend(a.id, h.suspend); suspendErr == nil {
			h.suspends.Add(1)
		}
	}
	var err error
	if h.leases {
		if err = a.lease.Fail(); err == nil {
			h.fails.Add(1)
		}
	} else {
		err = release(a)
	}
	return errors.Join(err, suspendErr)
}

// finish ends every rest still running (a cooldown, suspension or
// ejection) with Include, once the workers have stopped. Include refuses
// an active resource, which has nothing to end.
func (h *crsHealth) finish() {
	for id := range h.resources {
		err := h.s.Include(id)
		switch {
		case err == nil:
			h.includes.Add(1)
		case errors.Is(err, crserrors.ErrResourceNotInactive):
		case h.finishErr == nil:
			h.finishErr = err
		}
	}
}

func (h *crsHealth) calls() HealthCalls {
	return HealthCalls{Fails: h.fails.Load(), Suspends: h.suspends.Load(), Includes: h.includes.Load()}
}
