package loadtest

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// poolTitle names a built-in pool as the report shows it.
func poolTitle(p string) string {
	switch p {
	case "mutex":
		return "mutex-around-a-heap baseline"
	case "crs":
		return "crs scheduler"
	}
	return p
}

// titleOf is the report's pool title (reports from before it had one
// have only the pool's name).
func titleOf(r *Report) string {
	if r.PoolTitle != "" {
		return r.PoolTitle
	}
	return poolTitle(r.Pool)
}

// WriteText writes the report for a reader.
func WriteText(w io.Writer, r *Report) error {
	if r.LLM != nil {
		return writeLLMText(w, r.LLM)
	}
	if r.Tenants != nil {
		return writeTenantsText(w, r)
	}
	b := &strings.Builder{}
	writeHeading(b, r)
	writeRequests(b, r)
	writeThroughput(b, r)
	writeLatency(b, r)
	writeResources(b, r)
	writeRuntime(b, r)
	writeAccounting(b, r.Accounting)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeHeading says what ran: the scenario, the pool, the workload, how
// long, and where.
func writeHeading(b *strings.Builder, r *Report) {
	c, env := r.Config, r.Environment
	fmt.Fprintf(b, "crsload: %s scenario, %s", c.Scenario, titleOf(r))
	if in := r.Interrupted; in != nil && in.During != "" {
		fmt.Fprintf(b, " (INTERRUPTED by %s while %s)", in.Cause, in.During)
	} else if in != nil {
		fmt.Fprintf(b, " (INTERRUPTED by %s at %s)", in.Cause, dur(in.AtNs))
	}
	fmt.Fprintln(b)
	fmt.Fprintf(b, "  %s workers, %s resources, %s policy", group(c.Workers), group(c.Resources), c.Policy)
	if r.Pool == "crs" || r.Pool == "mutex" {
		fmt.Fprintf(b, ", %s strategy, %d heaps, %s order", c.Strategy, c.Heaps, c.Ordering)
	}
	if c.Policy == "exclusive" {
		fmt.Fprintf(b, ", capacity %d", c.Capacity)
	}
	if r.Pool == "crs" {
		fmt.Fprintf(b, ", %s", apiName(c.API, c.Policy))
	}
	fmt.Fprintf(b, "\n  backend latency %s (mean %s), %s failures", c.Latency, dur(c.LatencyMeanNs), pct(c.FailureRate))
	if c.Unhealthy > 0 {
		fmt.Fprintf(b, " (%s on %s: %s of all calls if they spread evenly)", pct(c.UnhealthyRate),
			unhealthyNames(c.Unhealthy), pct(Config{Resources: c.Resources, Unhealthy: c.Unhealthy,
				FailureRate: c.FailureRate, UnhealthyRate: c.UnhealthyRate}.FailureShare()))
	}
	fmt.Fprintf(b, ", acquire timeout %s", dur(c.TimeoutNs))
	if c.CancelRate > 0 {
		fmt.Fprintf(b, ", %s cancelled by the client", pct(c.CancelRate))
	}
	if c.CooldownNs > 0 {
		fmt.Fprintf(b, ", cooldown %s", dur(c.CooldownNs))
	}
	if c.SuspendNs > 0 {
		fmt.Fprintf(b, ", suspend %s after a failure", dur(c.SuspendNs))
	}
	if c.Eject > 0 {
		fmt.Fprintf(b, ",\n  eject after %d failures in a row (for %s, %s, ... at most %s", c.Eject, dur(c.EjectBaseNs), dur(2*c.EjectBaseNs), maxDur(c.EjectMaxNs))
		if c.EjectShare > 0 {
			fmt.Fprintf(b, "; at most %s of the resources at once", pct(c.EjectShare))
		}
		fmt.Fprintf(b, ")")
	}
	if r.Interrupted != nil {
		fmt.Fprintf(b, "\n  measured %s of the %s asked for, after a %s warm-up (interrupted); the run took %s\n",
			dur(r.Throughput.WindowNs), time.Duration(c.DurationNs), dur(c.WarmupNs), dur(r.ElapsedNs))
	} else {
		fmt.Fprintf(b, "\n  measured %s after a %s warm-up; the run took %s", dur(c.DurationNs), dur(c.WarmupNs), dur(r.ElapsedNs))
		// The calls in progress at the end finish; more than a second
		// after it means workers the machine had not run yet.
		if over := r.ElapsedNs - c.WarmupNs - c.DurationNs; over > int64(time.Second) {
			fmt.Fprintf(b, ", %s of it stopping the workers", dur(over))
		}
		fmt.Fprintln(b)
	}
	race := ""
	if env.Race {
		race = ", race detector on"
	}
	fmt.Fprintf(b, "  %s/%s, %d CPUs, GOMAXPROCS %d, %s%s, seed %d\n", env.GOOS, env.GOARCH, env.CPUs, env.GOMAXPROCS, env.Go, race, c.Seed)
}

func writeRequests(b *strings.Builder, r *Report) {
	q := r.Requests
	fmt.Fprintf(b, "\nRequests (whole run)\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, n uint64, note string) {
		fmt.Fprintf(tw, "  %s\t%s\t  %s\n", name, group(n), note)
	}
	row("total requests", q.Attempts, "")
	row("successful", q.Success, share(q.Success, q.Attempts))
	row("backend failures", q.BackendFailures, share(q.BackendFailures, q.Attempts)+"  (simulated; not the scheduler's)")
	row("acquire failures", q.AcquireFailures, firstErr(q.FirstAcquireError))
	row("acquire timeouts", q.AcquireTimeouts, share(q.AcquireTimeouts, q.Attempts))
	row("cancelled", q.Cancelled, fmt.Sprintf("%s by the client while waiting, %s during the call, %s waiting at the end",
		group(q.CancelledWaiting), group(q.CancelledBackend), group(q.StoppedWaiting)))
	row("release failures", q.ReleaseFailures, firstErr(q.FirstReleaseError))
	_ = tw.Flush()
	fmt.Fprintf(b, "  peak simultaneous: %s requests in progress, %s holding a resource\n", group(q.PeakInFlight), group(q.PeakHolding))
	writeHealth(b, r.PoolState)
}

// writeHealth says how the pool rested resources, if it did.
func writeHealth(b *strings.Builder, p PoolReport) {
	c := p.Calls
	var parts []string
	if h := p.Health; h != nil && *h != (HealthTotals{}) {
		parts = append(parts, fmt.Sprintf("%s failures reported, %s ejections, %s suspensions (cooldowns included)",
			group(h.Failures), group(h.Ejections), group(h.Suspensions)))
	} else if p.Health == nil && c.Suspends+c.Cooldowns > 0 {
		parts = append(parts, fmt.Sprintf("%s suspensions after a failure, %s cooldowns", group(c.Suspends), group(c.Cooldowns)))
	}
	if c.Includes > 0 {
		rests := "rests"
		if c.Includes == 1 {
			rests = "rest"
		}
		parts = append(parts, fmt.Sprintf("%s %s still running at the end, ended early (Include)", group(c.Includes), rests))
	}
	if len(parts) > 0 {
		fmt.Fprintf(b, "  health: %s\n", strings.Join(parts, "; "))
	}
}

func share(n, of uint64) string {
	if of == 0 {
		return ""
	}
	return pct(float64(n) / float64(of))
}

func firstErr(s string) string {
	if s == "" {
		return ""
	}
	return "first: " + s
}

// fewCalls is the count of calls in the window under which the report
// warns that its ratio is imprecise.
const fewCalls = 1000

func writeThroughput(b *strings.Builder, r *Report) {
	t, c := r.Throughput, r.Config
	defer writeOverload(b, r.Requests)
	if t.WindowNs <= 0 {
		fmt.Fprintf(b, "\nThroughput: nothing measured (interrupted before the measured window began)\n")
		return
	}
	fmt.Fprintf(b, "\nThroughput (measured window of %s: backend calls completed)\n", dur(t.WindowNs))
	fmt.Fprintf(b, "  measured               %s req/s  (%s calls)\n", group(int64(t.PerSecond+0.5)), group(t.Completed))
	if t.Limit.Bottleneck == "none" {
		fmt.Fprintf(b, "  theoretical limit      none (backend calls that take no time: nothing but the pool and the runtime bounds the rate)\n")
		fmt.Fprintf(b, "  ratio                  %s\n", ratioText(t))
		return
	}
	why := fmt.Sprintf("%s workers / %s mean latency", group(int64(t.Limit.MeanWorkers+0.5)), dur(t.Limit.MeanHoldNanos))
	switch {
	case t.Limit.Bottleneck == "pool":
		why = fmt.Sprintf("%d resources x capacity %d / (%s mean latency + %s cooldown): the pool is the bottleneck",
			c.Resources, c.Capacity, dur(t.Limit.MeanHoldNanos), dur(c.CooldownNs))
	case c.Policy == "shared":
		why += "; the shared policy never limits"
	}
	if c.CancelRate > 0 {
		why += fmt.Sprintf(", less the %s abandoned", pct(c.CancelRate))
	}
	fmt.Fprintf(b, "  theoretical limit      %s req/s  (%s)\n", group(int64(t.Limit.PerSecond+0.5)), why)
	fmt.Fprintf(b, "  ratio                  %s\n", ratioText(t))
	// A limit is a mean over calls: a window that held few of them can
	// land either side of it by chance. Without a ratio there is nothing
	// to warn about.
	if t.Completed < fewCalls && t.Limit.PerSecond > 0 {
		fmt.Fprintf(b, "  (only %s calls in the window: the ratio can be off by several percent either way)\n", group(t.Completed))
	}
	if t.AsRun.PerSecond > 0 {
		ms := func(ns int64) string { return fmt.Sprintf("%.2fms", float64(ns)/1e6) }
		fmt.Fprintf(b, "  limit as the calls ran %s req/s  (their measured mean, %s, in place of %s): ratio %s\n",
			group(int64(t.AsRun.PerSecond+0.5)), ms(t.AsRun.MeanHoldNanos), ms(t.Limit.MeanHoldNanos), pct(t.RatioAsRun))
	}
}

func writeLatency(b *strings.Builder, r *Report) {
	fmt.Fprintf(b, "\nLatency\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  \tcount\tmean\tp50\tp90\tp95\tp99\tp99.9\tmax\t\n")
	row := func(name string, s LatencySummary) {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, group(s.Count), dur(s.Mean),
			dur(s.P50), dur(s.P90), dur(s.P95), dur(s.P99), dur(s.P999), dur(s.Max))
	}
	l := r.Latency
	row("acquire (the call)", l.Acquire)
	row("backend (simulated)", l.Backend)
	row("total", l.Total)
	row("wake-up lag", l.WakeLag)
	_ = tw.Flush()
	fmt.Fprintf(b, "  acquire calls over 1ms: %s of %s", group(l.Acquire.Over1ms), group(l.Acquire.Count))
	switch {
	case l.Acquire.Over1ms == 0:
	case r.Pool != "crs" && r.Pool != "mutex":
		// An extension's pool: its own round trips are in the call.
	case r.Config.Policy == "shared" && r.Requests.AcquireTimeouts == 0:
		// Nothing waits under Shared while a resource is active.
		fmt.Fprintf(b, "; none waited for a resource: a call that long was held up\n  inside, descheduled or queued on a lock (compare the run-queue wait below)")
	default:
		fmt.Fprintf(b, "; mostly waiting for a resource")
	}
	fmt.Fprintln(b)
	fmt.Fprintf(b, "  (wake-up lag: how much longer the backend call took than drawn, i.e. how late\n")
	fmt.Fprintf(b, "   the Go runtime woke and ran the sleeping worker; backend latency is simulated\n")
	fmt.Fprintf(b, "   and is not the scheduler's)\n")
}

// maxResourceRows is the most resources the text report lists one by
// one; past it, the busiest and idlest few and a distribution.
const maxResourceRows = 20

// resourceSummary picks the rows a long resource table shows: the
// busiest and the idlest few by acquisitions (nil if all fit), and the
// distribution of acquisitions per resource.
func resourceSummary(rs []ResourceUse) (busiest, idlest []ResourceUse, spread string) {
	if len(rs) <= maxResourceRows {
		return nil, nil, ""
	}
	sorted := make([]ResourceUse, len(rs))
	copy(sorted, rs)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Acquisitions > sorted[j].Acquisitions })
	const few = 5
	busiest, idlest = sorted[:few], sorted[len(sorted)-few:]
	q := func(f float64) uint64 { // sorted is busiest first
		return sorted[len(sorted)-1-min(len(sorted)-1, int(f*float64(len(sorted))))].Acquisitions
	}
	spread = fmt.Sprintf("acquisitions per resource: min %s, p50 %s, p90 %s, max %s",
		group(q(0)), group(q(0.5)), group(q(0.9)), group(sorted[0].Acquisitions))
	never := len(sorted) - sort.Search(len(sorted), func(i int) bool { return sorted[i].Acquisitions == 0 })
	if never > 0 {
		spread += fmt.Sprintf("; %s never acquired", group(never))
	}
	return busiest, idlest, spread
}

func writeResources(b *strings.Builder, r *Report) {
	busiest, idlest, spread := resourceSummary(r.Resources)
	rows := r.Resources
	if spread == "" {
		fmt.Fprintf(b, "\nResources\n")
	} else {
		fmt.Fprintf(b, "\nResources (%s: the %d busiest and the %d idlest; the JSON report lists them all)\n",
			group(len(r.Resources)), len(busiest), len(idlest))
		fmt.Fprintf(b, "  %s\n", spread)
		rows = append(append([]ResourceUse{}, busiest...), idlest...)
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  \tacquisitions\tshare\tmean holders\tpeak holders\t")
	cells := 5
	if r.Config.Policy == "exclusive" {
		fmt.Fprintf(tw, "busy\t")
		cells++
	}
	failures := r.Requests.BackendFailures > 0
	if failures {
		fmt.Fprintf(tw, "backend failures\t")
		cells++
	}
	fmt.Fprintf(tw, "\n")
	for i, u := range rows {
		if spread != "" && i == len(busiest) {
			// As many cells as the other rows, or tabwriter would start
			// a new column block and misalign the idlest.
			fmt.Fprintf(tw, "  (%s more)\t%s\n", group(len(r.Resources)-len(rows)), strings.Repeat("\t", cells-1))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%.1f\t%s\t", u.Name, group(u.Acquisitions), pct(u.Share), u.MeanHolders, group(u.PeakHolders))
		if r.Config.Policy == "exclusive" {
			fmt.Fprintf(tw, "%s\t", pct(u.Utilisation))
		}
		if failures {
			fmt.Fprintf(tw, "%s\t", group(u.Failures))
		}
		fmt.Fprintf(tw, "\n")
	}
	_ = tw.Flush()
}

func writeRuntime(b *strings.Builder, r *Report) {
	rt, env := r.Runtime, r.Environment
	fmt.Fprintf(b, "\nGo runtime during the run\n")
	if rt.CPUNanos > 0 {
		fmt.Fprintf(b, "  CPU used            %s of %d x %s (%s); the OS preempted its threads %s times\n",
			dur(rt.CPUNanos), env.GOMAXPROCS, dur(r.ElapsedNs), pct(rt.CPUShare), group(rt.Preempted))
	}
	if la := rt.LoadAverage; la[0] != "" {
		fmt.Fprintf(b, "  machine load        %s at the start, %s at the end (1-minute load average, %d CPUs)\n", la[0], la[1], env.CPUs)
	}
	g := rt.GCPauses
	fmt.Fprintf(b, "  GC                  %d cycles; stop-the-world pauses: %s, p99 <= %s, max <= %s\n",
		rt.GCCycles, group(g.Count), dur(g.P99), dur(g.Max))
	if n := r.Requests.Attempts; n > 0 {
		fmt.Fprintf(b, "  heap allocations    %.2f, %.0f bytes per request (pool and harness, workers' setup included)\n",
			float64(rt.HeapAllocs)/float64(n), float64(rt.HeapAllocBytes)/float64(n))
	}
	s := rt.SchedLatency
	fmt.Fprintf(b, "  run-queue wait      %s goroutine wake-ups (sampled): p50 <= %s, p99 <= %s, p99.9 <= %s, max <= %s\n",
		group(s.Count), dur(s.P50), dur(s.P99), dur(s.P999), dur(s.Max))
	fmt.Fprintf(b, "  stalls              %d sampler ticks (every %s) late by more than a tick: %s in all, longest gap %s\n",
		rt.Stalls, dur(rt.SampleEveryNs), dur(rt.StallNs), dur(rt.LongestGapNs))
}

func writeAccounting(b *strings.Builder, a Accounting) {
	verdict := "OK"
	if !a.OK {
		verdict = "FAILED"
	}
	fmt.Fprintf(b, "\nAccounting: %s\n", verdict)
	for _, c := range a.Checks {
		mark := "ok  "
		switch {
		case c.Skipped:
			mark = "skip"
		case !c.OK:
			mark = "FAIL"
		}
		fmt.Fprintf(b, "  [%s] %s: %s\n", mark, c.Name, c.Detail)
	}
}

// unhealthyNames names the first n resources, the unhealthy ones.
func unhealthyNames(n int) string {
	switch n {
	case 1:
		return backendName(0)
	case 2:
		return backendName(0) + " and " + backendName(1)
	}
	return backendName(0) + " to " + backendName(n-1)
}

func maxDur(ns int64) string {
	if ns <= 0 {
		return "no cap"
	}
	return dur(ns)
}

// apiName says which scheduler calls a request makes.
func apiName(api, policy string) string {
	switch {
	case api == "lease":
		return "Lease + Lease.Release or Lease.Fail"
	case policy == "exclusive":
		return "AcquireContext + Release"
	}
	return "AcquireContext (a shared acquisition holds nothing to release)"
}

// ratioText is the throughput's share of the limit, or "n/a" and why
// without one: nothing bounds the rate, or no worker ran in the window
// (a window too short for any to start), so the limit is 0.
func ratioText(t Throughput) string {
	switch {
	case t.Limit.Bottleneck == "none":
		return "n/a (no limit)"
	case t.Limit.PerSecond <= 0:
		return "n/a (no worker ran in the measured window)"
	}
	return pct(t.Ratio)
}

// writeOverload warns when most requests timed out: the pool then serves
// a few of the workers, and a ratio near 100% says only that it was kept
// busy, not that the workload ran well.
func writeOverload(b *strings.Builder, q Requests) {
	if q.Attempts == 0 || 2*q.AcquireTimeouts <= q.Attempts {
		return
	}
	fmt.Fprintf(b, "  warning: %s of requests timed out waiting for a resource: the pool is overloaded,\n", share(q.AcquireTimeouts, q.Attempts))
	fmt.Fprintf(b, "  and the throughput is that of the few requests it served (fewer -workers, or a longer -timeout)\n")
}
