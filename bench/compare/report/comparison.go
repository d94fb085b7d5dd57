package main

import (
	"fmt"
	"io"
	"strings"
)

// operation is one row of the comparison: a benchmark of bench/compare and
// the impl whose heaps=N sub-benchmarks are crs's columns.
type operation struct {
	label string
	bench string
	crs   string // "crs" (default strategy), "crs-adaptive" or "crs-local"
}

// The rows, in the order of docs/BENCHMARKS.md. The adaptive and local
// rows reuse the baselines of their benchmarks: they have no strategy.
var (
	opAdd                    = operation{"Add", "Add", "crs"}
	opBatchAdd               = operation{"BatchAdd of 1,000", "BatchAdd", "crs"}
	opUpdate                 = operation{"Update", "Update", "crs"}
	opShared                 = operation{"shared Acquire, round robin", "AcquireShared", "crs"}
	opSharedAdaptive         = operation{"shared Acquire, adaptive", "AcquireShared", "crs-adaptive"}
	opSharedParallel         = operation{"shared Acquire, parallel, round robin", "AcquireSharedParallel", "crs"}
	opSharedParallelAdaptive = operation{"shared Acquire, parallel, adaptive", "AcquireSharedParallel", "crs-adaptive"}
	opExclusive              = operation{"exclusive Acquire + Release", "AcquireReleaseExclusive", "crs"}
	opExclusiveParallel      = operation{"exclusive Acquire + Release, parallel", "AcquireReleaseExclusiveParallel", "crs"}
	opExclusiveLocal         = operation{"exclusive Acquire + Release, local", "AcquireReleaseExclusive", "crs-local"}
	opExclusiveParallelLocal = operation{"exclusive Acquire + Release, parallel, local", "AcquireReleaseExclusiveParallel", "crs-local"}
	operations               = []operation{opAdd, opBatchAdd, opUpdate, opShared, opSharedAdaptive, opSharedParallel, opSharedParallelAdaptive, opExclusive, opExclusiveLocal, opExclusiveParallel, opExclusiveParallelLocal}
)

var heapCounts = []int{1, 8, 32}

func (o operation) tight() string { return o.bench + "/impl=tight" }
func (o operation) heap() string  { return o.bench + "/impl=heap" }
func (o operation) crsAt(heaps int) string {
	return fmt.Sprintf("%s/impl=%s/heaps=%d", o.bench, o.crs, heaps)
}

// columns are the benchmark names of the row's cells, tight first.
func (o operation) columns() []string {
	cols := []string{o.tight(), o.heap()}
	for _, h := range heapCounts {
		cols = append(cols, o.crsAt(h))
	}
	return cols
}

// writeComparison writes one row per operation: tight's median time, then
// each other implementation's with its ratio to tight, then the medians of
// allocs/op of all five.
func writeComparison(w io.Writer, res results) {
	fmt.Fprintln(w, "### Against the baselines")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Median time per operation; in parentheses, the ratio of medians to tight in the same run (below 1: faster than tight).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| operation | tight | heap (ratio) | crs heaps=1 (ratio) | crs heaps=8 (ratio) | crs heaps=32 (ratio) | allocs/op: tight / heap / crs 1 / 8 / 32 |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- |")
	for _, o := range operations {
		cells := []string{o.label}
		allocs := make([]string, 0, 5)
		for i, name := range o.columns() {
			ns, ok := res.median(name, "ns/op")
			cell := missing
			switch {
			case !ok:
			case i == 0:
				cell = duration(ns)
			default:
				cell = duration(ns)
				if r, ok := res.ratio(name, o.tight()); ok {
					cell += " (" + ratioText(r) + ")"
				}
			}
			cells = append(cells, cell)
			a := missing
			if v, ok := res.median(name, "allocs/op"); ok {
				a = count(v)
			}
			allocs = append(allocs, a)
		}
		cells = append(cells, strings.Join(allocs, " / "))
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	fmt.Fprintln(w)
}
