package compare

import (
	"fmt"
	"testing"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
	"github.com/crsched/crs/scheduler"
)

// The workloads of scheduler/scheduler_bench_test.go: 10,000 pre-loaded
// resources for Acquire and Update, heap counts 1, 8 and 32 for crs (the
// baselines have one heap and run once per operation), batches of 1,000.
const (
	preloaded = 10_000
	batchSize = 1_000
)

var heapCounts = []int{1, 8, 32}

// Sub-benchmark names: impl first and heaps last, so that
// `benchstat -col /impl,/heaps` lines every implementation up in one row per
// operation, with tight, the first to run, as the base column.
const (
	implTight = "impl=tight"
	implHeap  = "impl=heap"
)

func implCRS(heaps int) string         { return fmt.Sprintf("impl=crs/heaps=%d", heaps) }
func implCRSAdaptive(heaps int) string { return fmt.Sprintf("impl=crs-adaptive/heaps=%d", heaps) }
func implCRSLocal(heaps int) string    { return fmt.Sprintf("impl=crs-local/heaps=%d", heaps) }

// numbered returns the seed's pre-loaded resources: w0..w(n-1) with
// priorities 0..n-1.
func numbered(n int) []*worker {
	ws := make([]*worker, n)
	for i := range ws {
		ws[i] = &worker{ID: fmt.Sprintf("w%d", i), Priority: i}
	}
	return ws
}

// crsConfig configures crs as the seed's benchmarks do; a nil strategy is
// the default round robin.
func crsConfig(heaps int, policy config.AcquirePolicy, strategy acquire.AcquireStrategy) config.Config[*worker, string] {
	return config.Config[*worker, string]{
		HeapCount:       heaps,
		Comparator:      byPriority,
		KeyFunc:         workerID,
		AcquirePolicy:   policy,
		AcquireStrategy: strategy,
	}
}

// newCRS returns an empty scheduler configured by crsConfig, shut down
// when b ends.
func newCRS(b testing.TB, heaps int, policy config.AcquirePolicy, strategy acquire.AcquireStrategy) *scheduler.Scheduler[*worker, string] {
	b.Helper()
	s, err := scheduler.New(crsConfig(heaps, policy, strategy))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Shutdown)
	return s
}

func newTight(policy config.AcquirePolicy) *TightPool[*worker, string] {
	return NewTightPool(byPriority, workerID, policy)
}

func newHeap(policy config.AcquirePolicy) *HeapPool[*worker, string] {
	return NewHeapPool(byPriority, workerID, policy)
}

// batchAdder is what preload needs; preloading is setup, never timed, so
// an interface call there costs nothing that is measured.
type batchAdder interface{ BatchAdd([]*worker) error }

// preload loads the seed's 10,000 resources into p.
func preload[P batchAdder](b testing.TB, p P) P {
	b.Helper()
	if err := p.BatchAdd(numbered(preloaded)); err != nil {
		b.Fatal(err)
	}
	return p
}
