package loadtest

import "fmt"

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

func check(r *Report, st poolState) Accounting {
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
		"%s over %d resources", group(perResource), len(r.Resources))

	last := r.Timeline[len(r.Timeline)-1]
	add("nothing left in flight", last.InFlight == 0 && last.Waiting == 0 && last.Holding == 0,
		"%d requests, %d waiting, %d holds", last.InFlight, last.Waiting, last.Holding)

	res := r.Config.Resources
	add("the pool agrees: no holder, no waiter, every resource back",
		st.Holders == 0 && st.Waiters == 0 && st.Total == res && st.Active == res && st.Draining == 0 && st.Excluded == 0,
		"holders %d, waiters %d, active %d of %d (want %d), draining %d, excluded %d",
		st.Holders, st.Waiters, st.Active, st.Total, res, st.Draining, st.Excluded)

	waitsEnded := q.AcquireTimeouts + q.CancelledWaiting + q.StoppedWaiting
	add("the pool's cancelled waits match", st.Cancelled == waitsEnded,
		"pool %s = %s timeouts + %s cancelled while waiting", group(st.Cancelled), group(q.AcquireTimeouts),
		group(q.CancelledWaiting+q.StoppedWaiting))

	checkEvents(st, q, res, add, skip)

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
// hold nothing, so they have no release events at all.
func checkEvents(st poolState, q Requests, resources int, add func(string, bool, string, ...any), skip func(string, string, ...any)) {
	const name = "the scheduler's events agree"
	switch {
	case st.Events == nil:
		skip(name, "no events observer (-events=false)")
		return
	case st.Dropped > 0:
		skip(name, "%s events dropped by a full queue: counts incomplete (raise -event-queue)", group(st.Dropped))
		return
	}
	ev, rs := st.Events, st.Rests
	lifecycle := ev.Add == uint64(resources)+rs.ReAdds && ev.Remove == rs.Removes &&
		ev.Exclude == rs.Excludes && ev.Include == rs.Includes
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
		"none dropped; acquire %s for %s acquisitions; %s; add %s, remove %s, exclude %s, include %s",
		group(ev.Acquire), group(q.Acquisitions), holds,
		group(ev.Add), group(ev.Remove), group(ev.Exclude), group(ev.Include))
}
