package loadtest

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/scheduler"
)

// crsHealth is every call the harness makes to rest a resource: a cooldown
// after each release, a suspension after a backend failure. It is built on
// the scheduler's lifecycle API (Exclude/Include, and Remove/Add for a
// resource that is fully held), and kept in this one file so that moving
// to the core's own health features (config.Config.ReleaseCooldown,
// Scheduler.Suspend, Lease.Cooldown, Lease.Fail, config.Config.Ejection)
// is a change here alone:
//
//   - configure: c.ReleaseCooldown = cfg.Cooldown (and c.Ejection, if
//     failures are to eject after a run of them);
//   - end: with a failure, s.Suspend(a.id, suspend) when -suspend is set,
//     then a.lease.Fail() with -api lease (the only way to report a
//     failure to Ejection) or h.release(a) otherwise; with none, just
//     h.release(a). The cooldown then starts inside the release itself;
//   - settle: s.Include(id) for every resource, which ends a rest early;
//   - counts: nothing to count; the accounting would compare
//     Stats.Suspensions and Stats.Failures with the harness's counts
//     instead, and "every resource back" would also want
//     Stats.SuspendedResources == 0.
//
// What the lifecycle API cannot do is rest a resource in the same step as
// its release. Exclude refuses a resource whose every slot is taken, and
// releasing first lets the scheduler hand it straight to a waiter: the
// extensions/cooldown Manager, which excludes on the release event, has
// that window, and with 1,000 workers waiting on 4 exclusive resources it
// started 3 cooldowns in 580 releases. So a fully held resource is removed
// while still held, which makes it invisible at once; the release finishes
// the removal, and the timer adds it back. Every acquisition then respects
// the cooldown, which the cooldown scenario checks.
type crsHealth struct {
	s        *scheduler.Scheduler[*backend, int]
	backends []*backend
	release  func(*crsHandle) error
	cooldown time.Duration
	suspend  time.Duration
	// resting marks the resources a rest of ours has taken out of the
	// pool, so that a second rest started meanwhile (another holder's
	// release, under the Shared policy or a capacity above one) leaves the
	// first to finish rather than fighting it.
	resting []atomic.Bool
	timers  timerSet

	excludes, includes, removes, readds atomic.Uint64
}

func (h *crsHealth) configure(_ *config.Config[*backend, int], cfg Config, release func(*crsHandle) error) {
	h.cooldown, h.suspend, h.release = cfg.Cooldown, cfg.Suspend, release
	h.resting = make([]atomic.Bool, cfg.Resources)
}

// end releases the acquisition; a failed call rests the resource for the
// suspension, and every release for the cooldown (the longer of the two
// when both apply).
func (h *crsHealth) end(a *crsHandle, failed bool) error {
	d := h.cooldown
	if failed {
		d = max(d, h.suspend)
	}
	if d <= 0 {
		return h.release(a)
	}
	return h.rest(a, d)
}

// rest releases the acquisition and keeps its resource out of the pool
// for d. A resource already out of the pool (another holder's rest took
// it, it is draining) is simply released: its rest is under way.
func (h *crsHealth) rest(a *crsHandle, d time.Duration) error {
	id := a.id
	if !h.resting[id].CompareAndSwap(false, true) {
		return h.release(a)
	}
	err := h.s.Exclude(id)
	if err == nil {
		h.excludes.Add(1)
		h.timers.add(d, func() { h.include(id) })
		return h.release(a)
	}
	// Exclude refuses a resource whose every slot is taken, ours among
	// them: remove it while held instead. Any other refusal means it is
	// out of the pool already.
	if !errors.Is(err, crserrors.ErrResourceNotActive) || h.s.Remove(id) != nil {
		h.resting[id].Store(false)
		return h.release(a)
	}
	h.removes.Add(1)
	err = h.release(a)
	h.timers.add(d, func() { h.readd(id) })
	return err
}

// include ends a rest that Exclude began. The resting mark is cleared
// first: once the resource is back it can be taken and released at once,
// and that release must be able to start the next rest.
func (h *crsHealth) include(id int) {
	h.resting[id].Store(false)
	if h.s.Include(id) == nil {
		h.includes.Add(1)
	}
}

// readd ends a rest that Remove began, by adding the resource back (the
// mark is cleared first, as in include). With a capacity above one, other
// holders may still be draining it: Add is retried until they have
// released (at the latest, when the run ends and settle waits for it).
func (h *crsHealth) readd(id int) {
	h.resting[id].Store(false)
	for {
		err := h.s.Add(h.backends[id])
		if err == nil {
			h.readds.Add(1)
			return
		}
		if !errors.Is(err, crserrors.ErrDuplicateKey) {
			return // the scheduler closed: nothing to put back
		}
		time.Sleep(time.Millisecond)
	}
}

func (h *crsHealth) settle() { h.timers.flush() }

func (h *crsHealth) counts() restCounts {
	return restCounts{
		Excludes: h.excludes.Load(), Includes: h.includes.Load(),
		Removes: h.removes.Load(), ReAdds: h.readds.Load(),
	}
}
