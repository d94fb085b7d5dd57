package scheduler_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

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

// Affinity acquisitions while one goroutine of its own removes and adds
// back resources without pause: max-ms is the slowest acquisition, which
// is what a caller waits when a change of the resources gets in its way,
// and slow/op the share of acquisitions slower than 10 ms.
func BenchmarkAffinityUnderChurn(b *testing.B) {
	underChurn(b, func(s *scheduler.Scheduler[*worker, string], id acquire.AffinityIdentifier) error {
		_, err := s.AcquireByAffinity(id)
		return err
	})
}

// The control for BenchmarkAffinityUnderChurn: Acquire, which no change
// of the affinity ring can delay, under the same churn. Its max-ms is
// what the machine and the collector alone make a call wait.
func BenchmarkAcquireUnderChurn(b *testing.B) {
	underChurn(b, func(s *scheduler.Scheduler[*worker, string], _ acquire.AffinityIdentifier) error {
		_, err := s.Acquire()
		return err
	})
}

func underChurn(b *testing.B, call func(*scheduler.Scheduler[*worker, string], acquire.AffinityIdentifier) error) {
	const n = 100_000
	s, ws := affinityPool(b, n)
	ids := sessions(1024)
	if _, err := s.AcquireByAffinity(ids[0]); err != nil {
		b.Fatal(err)
	}
	stop, changes := make(chan struct{}), make(chan int)
	go func() {
		r := rand.New(rand.NewPCG(26, 2))
		for i := 0; ; i++ {
			select {
			case <-stop:
				changes <- i
				return
			default:
			}
			v := ws[r.IntN(len(ws))]
			if err := s.Remove(v.ID); err != nil {
				b.Error(err)
			}
			if err := s.Add(v); err != nil {
				b.Error(err)
			}
		}
	}()
	var slowest, slow, next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i, mine := int(next.Add(1))*7919, time.Duration(0)
		for pb.Next() {
			start := time.Now()
			if err := call(s, ids[i%len(ids)]); err != nil {
				b.Error(err)
			}
			d := time.Since(start)
			if d > 10*time.Millisecond {
				slow.Add(1)
			}
			mine = max(mine, d)
			i++
		}
		for old := slowest.Load(); int64(mine) > old && !slowest.CompareAndSwap(old, int64(mine)); old = slowest.Load() {
		}
	})
	b.StopTimer()
	close(stop)
	b.ReportMetric(float64(<-changes)/float64(b.N), "changes/op")
	b.ReportMetric(float64(slowest.Load())/1e6, "max-ms")
	b.ReportMetric(float64(slow.Load())/float64(b.N), "slow/op")
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
