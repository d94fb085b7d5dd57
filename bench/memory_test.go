package bench_test

import (
	"cmp"
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
	"github.com/crsched/crs/scheduler"
)

// item is the smallest useful resource: a key and a priority, held by
// value, so that what the heap grows by is the scheduler's own record.
type item struct {
	key      uint64
	priority int64
}

// BenchmarkMemoryPerResource reports what the scheduler keeps per
// resource: the live heap after a BatchAdd of n items into an Exclusive
// scheduler with HeapCount 8 and random priorities, less the items
// themselves (which the scheduler stores by value), over n. It then
// makes one AcquireByAffinity and reports what the affinity ring adds.
// Each iteration builds a fresh scheduler, so run it once:
//
//	go test -run '^$' -bench MemoryPerResource -benchtime 1x -count 3 .
func BenchmarkMemoryPerResource(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("resources=%d", n), func(b *testing.B) {
			var perResource, perAffinity float64
			for b.Loop() {
				perResource, perAffinity = measureMemory(b, n)
			}
			b.ReportMetric(perResource, "B/resource")
			b.ReportMetric(perAffinity, "affinity-B/resource")
		})
	}
}

// measureMemory builds one scheduler of n items and returns its bytes
// per resource and its affinity ring's.
func measureMemory(b *testing.B, n int) (perResource, perAffinity float64) {
	b.Helper()
	items := make([]item, n)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range items {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		items[i] = item{key: uint64(i), priority: int64(x >> 1)}
	}
	before := liveHeap()
	s, err := scheduler.New(config.Config[item, uint64]{
		HeapCount:     8,
		Comparator:    func(a, b item) int { return cmp.Compare(a.priority, b.priority) },
		KeyFunc:       func(it item) uint64 { return it.key },
		AcquirePolicy: config.Exclusive,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown()
	if err := s.BatchAdd(items); err != nil {
		b.Fatal(err)
	}
	added := liveHeap()
	if _, err := s.AcquireByAffinity(acquire.StringIdentifier("client-1")); err != nil {
		b.Fatal(err)
	}
	withRing := liveHeap()
	runtime.KeepAlive(items)
	runtime.KeepAlive(s)
	perResource = float64(added-before)/float64(n) - float64(unsafe.Sizeof(item{}))
	perAffinity = float64(withRing-added) / float64(n)
	return perResource, perAffinity
}

// liveHeap is the heap in use after a full collection.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
