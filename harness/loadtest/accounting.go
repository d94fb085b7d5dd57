package loadtest

import (
	"fmt"
	"strings"
)

// Accounting is the end-of-run check that nothing was lost or counted
// twice. A load test that only reports speed can hide a pool that drops
// requests or leaks resources; these identities cannot hold if it does.
type Accounting struct {
	OK     bool    `json:"ok"`
	Checks []Check `json:"checks"`
}

// Check is one identity. A skipped check could not be made (Detail says
// why) and does not fail the run.
type Check struct {
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Skipped bool   `json:"skipped,omitempty"`
	Detail  string `json:"detail"`
}

func check(r *Report, st PoolState) Accounting {
	q := r.Requests
	var a Accounting
	add := func(name string, ok bool, format string, args ...any) {
		a.Checks = append(a.Checks, Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
	}
	skip := func(name, format string, args ...any) {
		a.Checks = append(a.Checks, Check{Name: name, OK: true, Skipped: true, Detail: fmt.Sprintf(format, args...)})
	}

	outcomes := q.Success + q.BackendFailures + q.AcquireFailures + q.AcquireTimeouts + q.Cancelled
	add("every attempt has exactly one outcome", q.Attempts == outcomes,
		"%s attempts = %s success + %s backend failures + %s acquire failures + %s timeouts + %s cancelled",
		group(q.Attempts), group(q.Success), group(q.BackendFailures), group(q.AcquireFailures),
		group(q.AcquireTimeouts), group(q.Cancelled))

	reached := q.Success + q.BackendFailures + q.CancelledBackend
	add("every acquisition reached the backend", q.Acquisitions == reached,
		"%s acquisitions = %s success + %s backend failures + %s cancelled during the call",
		group(q.Acquisitions), group(q.Success), group(q.BackendFailures), group(q.CancelledBackend))

	note := ""
	if !st.HoldsTracked {
		note = " (shared acquisitions without a lease hold nothing: ending one releases nothing)"
	}
	add("every acquisition released exactly once", q.Releases == q.Acquisitions && q.ReleaseFailures == 0,
		"%s acquisitions, %s released, %s release failures%s", group(q.Acquisitions), group(q.Releases), group(q.ReleaseFailures), note)

	var perResource uint64
	for _, u := range r.Resources {
		perResource += u.Acquisitions
	}
	add("per-resource acquisitions add up", perResource == q.Acquisitions,
		"%s over %s resources", group(perResource), group(len(r.Resources)))

	last := r.Timeline[len(r.Timeline)-1]
	add("nothing left in flight", last.InFlight == 0 && last.Waiting == 0 && last.Holding == 0,
		"%d requests, %d waiting, %d holds", last.InFlight, last.Waiting, last.Holding)

	const agrees = "the pool agrees: no holder, no waiter, every resource back"
	res := r.Config.Resources
	resting := st.Suspended + st.Ejected + st.RateLimited
	if st.Error != "" {
		add(agrees, false, "%s", st.Error)
	} else {
		add(agrees,
			st.Holders == 0 && st.Waiters == 0 && st.Total == res && st.Active == res &&
				st.Draining == 0 && st.Excluded == 0 && resting == 0,
			"holders %d, waiters %d, active %d of %d (want %d), draining %d, excluded %d, resting %d (suspended %d, ejected %d, rate-limited %d)",
			st.Holders, st.Waiters, st.Active, st.Total, res, st.Draining, st.Excluded, resting,
			st.Suspended, st.Ejected, st.RateLimited)
	}

	const cancelled = "the pool's cancelled waits match"
	waitsEnded := q.AcquireTimeouts + q.CancelledWaiting + q.StoppedWaiting
	if st.CountsCancelled {
		add(cancelled, st.Cancelled == waitsEnded,
			"pool %s = %s timeouts + %s cancelled while waiting", group(st.Cancelled), group(q.AcquireTimeouts),
			group(q.CancelledWaiting+q.StoppedWaiting))
	} else {
		skip(cancelled, "the %s pool does not count them (%s timeouts, %s cancelled while waiting)", r.Pool,
			group(q.AcquireTimeouts), group(q.CancelledWaiting+q.StoppedWaiting))
	}

	checkEvents(r.Pool, st, q, res, add, skip)
	checkHealth(r, st, add, skip)
	a.Checks = append(a.Checks, st.Checks...)

	if q.CooldownChecked {
		add("no acquisition within a cooldown", q.CooldownViolations == 0,
			"%s acquisitions less than the cooldown after their resource's release", group(q.CooldownViolations))
	}

	a.OK = true
	for _, c := range a.Checks {
		a.OK = a.OK && c.OK
	}
	return a
}

// checkEvents compares the scheduler's events with the harness's counts.
// The scheduler also emits events of its own making: when a waiter is
// served just as its context ends, or twice at once, it hands the extra
// resource back, an acquire no caller sees, with a release when a hold
// was taken. Hence acquires may exceed the acquisitions, by as many
// releases as exceed the harness's. Shared acquisitions without a lease
// hold nothing, so they have no release events at all. Rests are counted
// by the pool (its health totals): its suspend and eject events must
// match them; resumes (rests that ran out) have nothing to match.
func checkEvents(pool string, st PoolState, q Requests, resources int, add func(string, bool, string, ...any), skip func(string, string, ...any)) {
	const name = "the scheduler's events agree"
	switch {
	case st.Events == nil && pool == "crs":
		skip(name, "no events observer (-events=false)")
		return
	case st.Events == nil:
		skip(name, "the %s pool reports no events", pool)
		return
	case st.Dropped > 0:
		skip(name, "%s events dropped by a full queue: counts incomplete (raise -event-queue)", group(st.Dropped))
		return
	}
	ev := st.Events
	lifecycle := ev.Add == uint64(resources) && ev.Remove == 0 && ev.Exclude == 0 && ev.Include == st.Calls.Includes
	if h := st.Health; h != nil {
		lifecycle = lifecycle && ev.Suspend == h.Suspensions && ev.Eject == h.Ejections
	}
	extra := ev.Acquire - min(ev.Acquire, q.Acquisitions)
	releases := ev.Release == 0
	if st.HoldsTracked {
		releases = ev.Release >= q.Releases && ev.Release-q.Releases == extra
	}
	holds := fmt.Sprintf("release %s for %s releases, %s handed back inside the scheduler",
		group(ev.Release), group(q.Releases), group(extra))
	if !st.HoldsTracked {
		holds = fmt.Sprintf("release %s (shared acquisitions hold nothing)", group(ev.Release))
	}
	add(name, lifecycle && releases && ev.Acquire >= q.Acquisitions,
		"none dropped; acquire %s for %s acquisitions; %s; add %s, remove %s, exclude %s, include %s for %s Include calls; suspend %s, eject %s, resume %s",
		group(ev.Acquire), group(q.Acquisitions), holds,
		group(ev.Add), group(ev.Remove), group(ev.Exclude), group(ev.Include), group(st.Calls.Includes),
		group(ev.Suspend), group(ev.Eject), group(ev.Resume))
}

// checkHealth compares the pool's health totals with the calls the
// harness made. Every Lease.Fail is a failure. Every Suspend call is a
// suspension; under a release cooldown, so is every end of a hold, unless
// that end ejects the resource (the cooldown then runs inside the
// ejection): there, suspensions + ejections = Suspend calls + releases.
// Each ejection takes the configured number of failures in a row, so
// ejections x that number cannot exceed the failures.
func checkHealth(r *Report, st PoolState, add func(string, bool, string, ...any), skip func(string, string, ...any)) {
	const name = "the pool's health totals agree"
	c, cfg := st.Calls, r.Config
	if st.Health == nil {
		var made []string
		for _, n := range []struct {
			call  string
			count uint64
		}{{"Lease.Fail", c.Fails}, {"Suspend", c.Suspends}, {"Lease.Cooldown", c.Cooldowns}, {"Include", c.Includes}} {
			if n.count > 0 {
				made = append(made, group(n.count)+" "+n.call)
			}
		}
		if len(made) == 0 {
			made = []string{"no"}
		}
		skip(name, "the %s pool keeps none; the harness made %s calls", r.Pool, strings.Join(made, ", "))
		return
	}
	h := *st.Health
	ok := h.Failures == c.Fails
	detail := fmt.Sprintf("failures %s = %s Lease.Fail calls; ", group(h.Failures), group(c.Fails))
	if cfg.CooldownNs > 0 {
		var ends uint64
		if st.HoldsTracked {
			ends = r.Requests.Releases
		}
		ok = ok && h.Suspensions+h.Ejections == c.Suspends+ends
		detail += fmt.Sprintf("suspensions %s + ejections %s = %s Suspend calls + %s releases, each starting a cooldown; ",
			group(h.Suspensions), group(h.Ejections), group(c.Suspends), group(ends))
	} else {
		ok = ok && h.Suspensions == c.Suspends
		detail += fmt.Sprintf("suspensions %s = %s Suspend calls; ", group(h.Suspensions), group(c.Suspends))
	}
	if cfg.Eject > 0 {
		ok = ok && h.Ejections*uint64(cfg.Eject) <= h.Failures
		detail += fmt.Sprintf("%s ejections x %d failures in a row <= %s failures", group(h.Ejections), cfg.Eject, group(h.Failures))
	} else {
		ok = ok && h.Ejections == 0
		detail += fmt.Sprintf("%s ejections (ejection off)", group(h.Ejections))
	}
	add(name, ok, "%s; %s Include calls at the end", detail, group(c.Includes))
}
