package bench_test

import (
	"cmp"
	"context"
	"fmt"
	"testing"

	"github.com/crsched/crs/bench/internal/cputime"
	"github.com/crsched/crs/config"
	"github.com/crsched/crs/scheduler"
)

// BenchmarkUncontendedHold prices a Lease against an anonymous exclusive
// hold: the same scheduler (Exclusive, HeapCount 8), one goroutine, a
// resource always available, so what differs is only the bookkeeping of
// the hold (a lease's token and its entry on the node, against a counter).
// Pools of 10,000 resources (as in docs/BENCHMARKS.md, where the heap
// sifts dominate) and of 4 (the waitload pool, where they do not).
//
// The op is the last element of the name so that benchstat can put the two
// side by side and give the ratio:
//
//	go test -run '^$' -bench UncontendedHold -benchmem -count 6 . > hold.txt
//	benchstat -col /op hold.txt
//
// Besides sec/op (wall time) each reports cpu-ns/op, the process's CPU
// time per operation: on a shared machine the wall time also counts the
// moments a neighbour had the core, the CPU time does not, so its ratio
// is the one to trust when the two disagree.
func BenchmarkUncontendedHold(b *testing.B) {
	for _, n := range []int{10_000, 4} {
		b.Run(fmt.Sprintf("resources=%d/op=acquire", n), func(b *testing.B) {
			s := preloaded(b, n)
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				v, err := s.Acquire()
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Release(v.id); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("resources=%d/op=lease", n), func(b *testing.B) {
			s := preloaded(b, n)
			ctx := context.Background()
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				l, err := s.Lease(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Release(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// reportCPU starts the CPU clock; the function it returns reports the CPU
// time per iteration as cpu-ns/op. Call it right before the b.Loop loop
// and defer the result, so that setup is not counted.
func reportCPU(b *testing.B) func() {
	start, ok := cputime.Now()
	return func() {
		end, _ := cputime.Now()
		if ok && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

// resource is the scheduler benchmarks' worker: a string key and an int
// priority, so that the figures compare with docs/BENCHMARKS.md.
type resource struct {
	id       string
	priority int
}

// preloaded is an Exclusive scheduler with HeapCount 8 holding n
// resources, shut down when the benchmark ends.
func preloaded(b *testing.B, n int) *scheduler.Scheduler[*resource, string] {
	b.Helper()
	s, err := scheduler.New(config.Config[*resource, string]{
		HeapCount:     8,
		Comparator:    func(x, y *resource) int { return cmp.Compare(x.priority, y.priority) },
		KeyFunc:       func(r *resource) string { return r.id },
		AcquirePolicy: config.Exclusive,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Shutdown)
	rs := make([]*resource, n)
	for i := range rs {
		rs[i] = &resource{id: fmt.Sprintf("r%d", i), priority: i}
	}
	if err := s.BatchAdd(rs); err != nil {
		b.Fatal(err)
	}
	return s
}
