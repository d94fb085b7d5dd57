package compare

import "cmp"

// worker is the resource every benchmark here hands out: the seed's
// benchmark resource (scheduler/scheduler_bench_test.go), a string key and
// an int priority, so that the figures line up with docs/BENCHMARKS.md.
type worker struct {
	ID       string
	Priority int
}

// byPriority is the comparator given to crs and to both baselines alike:
// smaller priorities are handed out first. All three call it through a
// func value, since that is the contract a generic pool offers its users.
func byPriority(a, b *worker) int { return cmp.Compare(a.Priority, b.Priority) }

// workerID is the key function given to all three pools.
func workerID(v *worker) string { return v.ID }
