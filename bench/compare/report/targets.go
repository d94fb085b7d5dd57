package main

import (
	"fmt"
	"io"
)

// The targets of issue #3 ("Hot path at the hardware's limit"), checked at
// HeapCount 8 with the default configuration, as ratios to tight in the
// same run; the strategies' targets are absolute, since no baseline has a
// strategy.

// ratioTarget is a target on an operation's ratio to tight, and optionally
// on its allocations.
type ratioTarget struct {
	label      string
	op         operation
	maxRatio   float64
	zeroAllocs bool
	goal       string
}

const targetHeaps = 8

var ratioTargets = []ratioTarget{
	{"shared Acquire, sequential", opShared, 0.5, true, "<= 0.5x, 0 allocs"},
	{"shared Acquire, parallel, default round robin", opSharedParallel, 0.6, true, "<= 0.6x, 0 allocs"},
	{"shared Acquire, parallel, adaptive strategy", opSharedParallelAdaptive, 0.25, true, "<= 0.25x, 0 allocs"},
	{"exclusive Acquire+Release, sequential", opExclusive, 1.0, true, "<= 1.0x, 0 allocs"},
	{"exclusive Acquire+Release, parallel", opExclusiveParallel, 0.6, true, "<= 0.6x, 0 allocs"},
	// The benchmark allocates the caller's values before the timer starts,
	// so "no allocation beyond the caller's value" is 0 allocs/op here.
	{"Update", opUpdate, 1.0, true, "<= 1.0x, no allocation beyond the caller's value"},
	{"Add", opAdd, 1.0, false, "<= 1.0x"},
	{"BatchAdd of 1,000", opBatchAdd, 0.7, false, "<= 0.7x"},
}

// strategy is one strategy's Select benchmark in the acquire package,
// with the benchmark of the step it cannot do without (see
// BenchmarkFloor there).
type strategy struct {
	label    string
	seq, par string // par is "" when there is no parallel benchmark
	floor    string // "" when there is no such step
}

var strategies = []strategy{
	{"round robin", "Select/RoundRobin", "SelectParallel/RoundRobin", floorAtomicAdd},
	{"weighted", "Select/Weighted", "SelectParallel/Weighted", floorRand},
	{"adaptive", "Select/Adaptive", "SelectParallel/Adaptive", floorRand},
	{"ring (ConsistentHashRing.GetShard)", "GetShard", "", ""},
}

// untargeted are the strategies the issue sets no target for (it names
// the four above), listed in the Select table only.
var untargeted = []strategy{
	{"local (no target)", "Select/Local", "SelectParallel/Local", ""},
}

const (
	floorAtomicAdd = "Floor/AtomicAdd"  // one locked add on a counter
	floorRand      = "Floor/RandUint64" // one math/rand/v2 Uint64
)

// floorText describes s's sequential cost ns as a ratio to its floor in
// the same run, or "" when it has none.
func floorText(res results, s strategy, ns float64) string {
	if s.floor == "" {
		return ""
	}
	f, ok := res.median(s.floor, "ns/op")
	if !ok || f <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%s its floor)", ratioText(ns/f))
}

// maxSelectNs is the strategies' target, per sequential call.
const maxSelectNs = 10

// verdict is a target's outcome.
func verdict(ok, met bool) string {
	switch {
	case !ok:
		return "no data"
	case met:
		return "met"
	default:
		return "**not met**"
	}
}

// checkRatio returns the measured cell and the verdict of t.
func checkRatio(res results, t ratioTarget) (measured, outcome string) {
	name := t.op.crsAt(targetHeaps)
	r, ok := res.ratio(name, t.op.tight())
	allocs, okA := res.median(name, "allocs/op")
	if !ok || !okA {
		return missing, verdict(false, false)
	}
	met := r <= t.maxRatio && (!t.zeroAllocs || allocs == 0)
	rounds := ""
	if lo, hi, ok := res.roundRatios(name, t.op.tight()); ok {
		rounds = fmt.Sprintf(" (rounds %.2f-%.2f)", lo, hi)
	}
	return fmt.Sprintf("%s%s, %s allocs", ratioText(r), rounds, count(allocs)), verdict(true, met)
}

// checkStrategy returns the measured cell and the verdict of s's target,
// judged on the sequential call: the parallel figure is a throughput on
// GOMAXPROCS Ps, shown apart in writeStrategies.
func checkStrategy(res results, s strategy) (measured, outcome string) {
	ns, ok := res.median(s.seq, "ns/op")
	allocs, okA := res.median(s.seq, "allocs/op")
	if !ok || !okA {
		return missing, verdict(false, false)
	}
	met := ns <= maxSelectNs && allocs == 0
	return fmt.Sprintf("%s%s, %s allocs", duration(ns), floorText(res, s, ns), count(allocs)), verdict(true, met)
}

func writeTargets(w io.Writer, res results) {
	fmt.Fprintln(w, "### Issue #3 targets")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "crs at heaps=%d, default configuration, ratio of medians to tight in the same run (in parentheses, the lowest and highest ratio within one round); Select per sequential call.\n", targetHeaps)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | goal | measured | status |")
	fmt.Fprintln(w, "| --- | --- | --- | --- |")
	for _, t := range ratioTargets {
		m, v := checkRatio(res, t)
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", t.label, t.goal, m, v)
	}
	for _, s := range strategies {
		m, v := checkStrategy(res, s)
		fmt.Fprintf(w, "| strategy Select, %s | <= %d ns, 0 allocs | %s | %s |\n", s.label, maxSelectNs, m, v)
	}
	fmt.Fprintln(w)
}
