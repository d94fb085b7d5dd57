package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// lineRoundTrip is bench/compare's BenchmarkLineRoundTrip: a cache
// line's round trip between two cores.
const lineRoundTrip = "LineRoundTrip"

// parallelOps are the rows whose targets are on b.RunParallel, in the
// order of the targets table, and the local strategy's parallel row,
// which keeps each core in its own shards.
var parallelOps = []operation{opSharedParallel, opSharedParallelAdaptive, opExclusiveParallel, opExclusiveParallelLocal}

// writeRounds writes the parallel rows' ratios round by round, beside
// the line round trip timed in the same round. Every line that two cores
// write in turn costs one such trip, and on a virtual machine its cost
// changes when the hypervisor moves the virtual CPUs, which can happen
// between two rounds of one run; a median over rounds of both kinds
// says little without this. It writes nothing unless some target's
// benchmarks ran in rounds with the round trip (see inRounds).
func writeRounds(w io.Writer, res results) {
	trips := res.samples[lineRoundTrip]["ns/op"]
	some := false
	for _, o := range parallelOps {
		some = some || res.roundsOf(o)
	}
	if !some {
		return
	}
	fmt.Fprintln(w, "### Parallel rows, round by round")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "crs at heaps=%d: its ratio to tight in the round, and its time; the round trip is one cache line's, from a core to the other and back, timed in the same round (compare.sh's INTERLEAVE=1 runs every benchmark once a round).\n", targetHeaps)
	fmt.Fprintln(w)
	header := []string{"round", "line round trip"}
	for _, o := range parallelOps {
		header = append(header, o.label)
	}
	fmt.Fprintf(w, "| %s |\n", strings.Join(header, " | "))
	fmt.Fprintf(w, "|%s\n", strings.Repeat(" --- |", len(header)))
	for i, trip := range trips {
		cells := []string{strconv.Itoa(i + 1), duration(trip)}
		for _, o := range parallelOps {
			cells = append(cells, res.roundCell(o, i, len(trips)))
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	fmt.Fprintln(w)
}

// roundsOf reports whether o's crs and tight benchmarks ran in the
// rounds of the round trip.
func (r results) roundsOf(o operation) bool {
	return r.inRounds(o.crsAt(targetHeaps), lineRoundTrip) && r.inRounds(o.tight(), lineRoundTrip)
}

// roundCell is o's ratio to tight in round i of rounds, with crs's time,
// or missing when o did not run in those rounds.
func (r results) roundCell(o operation, i, rounds int) string {
	ns, ds := r.samples[o.crsAt(targetHeaps)]["ns/op"], r.samples[o.tight()]["ns/op"]
	if !r.roundsOf(o) || len(ns) != rounds || len(ds) != rounds || ds[i] == 0 {
		return missing
	}
	return fmt.Sprintf("%s (%s)", ratioText(ns[i]/ds[i]), duration(ns[i]))
}
