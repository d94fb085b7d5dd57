package scheduler_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
	"github.com/crsched/crs/scheduler"
)

// The affinity benchmarks of issue 26: 8 shards, random priorities.

func affinityPool(b *testing.B, resources int) (*scheduler.Scheduler[*worker, string], []*worker) {
	s := newScheduler(b, baseConfig(8, config.Shared))
	r := rand.New(rand.NewPCG(26, 1))
	ws := make([]*worker, resources)
	for i := range ws {
		ws[i] = w(fmt.Sprintf("key-%d", i), r.IntN(1_000_000))
	}
	if err := s.BatchAdd(ws); err != nil {
		b.Fatal(err)
	}
	return s, ws
}

func sessions(n int) []acquire.AffinityIdentifier {
	ids := make([]acquire.AffinityIdentifier, n)
	for i := range ids {
		ids[i] = acquire.StringIdentifier(fmt.Sprintf("session-%d", i))
	}
	return ids
}

// Steady state: the set of resources does not change.
func BenchmarkAcquireByAffinity(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("resources=%d", n), func(b *testing.B) {
			s, _ := affinityPool(b, n)
			ids := sessions(1024)
			if _, err := s.AcquireByAffinity(ids[0]); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.AcquireByAffinity(ids[i%len(ids)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A resource leaves and comes back between affinity acquisitions.
func BenchmarkAffinityChurn(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("resources=%d", n), func(b *testing.B) {
			s, ws := affinityPool(b, n)
			ids := sessions(1024)
			if _, err := s.AcquireByAffinity(ids[0]); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v := ws[i%len(ws)]
				if err := s.Remove(v.ID); err != nil {
					b.Fatal(err)
				}
				if err := s.Add(v); err != nil {
					b.Fatal(err)
				}
				if _, err := s.AcquireByAffinity(ids[i%len(ids)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The first affinity acquisition after a BatchAdd into an empty
// scheduler, and the heap it leaves in use per resource. A million
// resources only with CRS_AFFINITY_1M=1: it takes long before the ring.
func BenchmarkAffinityFirstCall(b *testing.B) {
	sizes := []int{100_000}
	if os.Getenv("CRS_AFFINITY_1M") == "1" {
		sizes = append(sizes, 1_000_000)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("resources=%d", n), func(b *testing.B) {
			id := acquire.StringIdentifier("session-1")
			var grown uint64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				s, _ := affinityPool(b, n)
				before := heapInUse()
				b.StartTimer()
				if _, err := s.AcquireByAffinity(id); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				grown += heapInUse() - min(before, heapInUse())
				runtime.KeepAlive(s)
				s.Shutdown()
				b.StartTimer()
			}
			b.ReportMetric(float64(grown)/float64(b.N)/float64(n), "affinity-B/resource")
		})
	}
}
