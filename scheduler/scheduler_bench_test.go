package scheduler_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/scheduler"
)

// The seed's benchmark set: 10,000 pre-loaded resources for Acquire and
// Update, HeapCount 1, 8 and 32; BatchAdd of 1,000 into an empty scheduler. The comparison against baseline pools
// lives in the bench module.

const preloaded = 10_000

var heapCounts = []int{1, 8, 32}

func preloadedScheduler(b *testing.B, heaps int, policy config.AcquirePolicy) *scheduler.Scheduler[*worker, string] {
	s := newScheduler(b, baseConfig(heaps, policy))
	if err := s.BatchAdd(numbered(preloaded)); err != nil {
		b.Fatal(err)
	}
	return s
}

func BenchmarkAdd(b *testing.B) {
	for _, h := range heapCounts {
		b.Run(fmt.Sprintf("heaps=%d", h), func(b *testing.B) {
			s := newScheduler(b, baseConfig(h, config.Shared))
			ws := make([]*worker, b.N)
			for i := range ws {
				ws[i] = w("a"+strconv.Itoa(i), i%1000)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := s.Add(ws[i]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkBatchAdd(b *testing.B) {
	for _, h := range heapCounts {
		b.Run(fmt.Sprintf("heaps=%d", h), func(b *testing.B) {
			batches := make([][]*worker, b.N)
			for i := range batches {
				batch := make([]*worker, 1000)
				for j := range batch {
					batch[j] = w("b"+strconv.Itoa(i*1000+j), j)
				}
				batches[i] = batch
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				s, err := scheduler.New(baseConfig(h, config.Shared))
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := s.BatchAdd(batches[i]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkUpdate(b *testing.B) {
	for _, h := range heapCounts {
		b.Run(fmt.Sprintf("heaps=%d", h), func(b *testing.B) {
			s := preloadedScheduler(b, h, config.Shared)
			ws := numbered(preloaded)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v := ws[i%preloaded]
				v.Priority = (v.Priority + 7919) % preloaded
				if err := s.Update(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAcquireShared(b *testing.B) {
	for _, h := range heapCounts {
		b.Run(fmt.Sprintf("heaps=%d", h), func(b *testing.B) {
			s := preloadedScheduler(b, h, config.Shared)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Acquire(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAcquireSharedParallel(b *testing.B) {
	for _, h := range heapCounts {
		b.Run(fmt.Sprintf("heaps=%d", h), func(b *testing.B) {
			s := preloadedScheduler(b, h, config.Shared)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.Acquire(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func BenchmarkAcquireReleaseExclusive(b *testing.B) {
	for _, h := range heapCounts {
		b.Run(fmt.Sprintf("heaps=%d", h), func(b *testing.B) {
			s := preloadedScheduler(b, h, config.Exclusive)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v, err := s.Acquire()
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Release(v.ID); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAcquireReleaseExclusiveParallel(b *testing.B) {
	for _, h := range heapCounts {
		b.Run(fmt.Sprintf("heaps=%d", h), func(b *testing.B) {
			s := preloadedScheduler(b, h, config.Exclusive)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					v, err := s.Acquire()
					if err != nil {
						b.Error(err)
						return
					}
					if err := s.Release(v.ID); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkAcquireReleaseExclusiveOverlapping holds two resources at once
// and gives them back first-taken first, at HeapCount 1: every operation
// finds the heap changed since its resource was taken, so none saves a
// sift (an Acquire of the top leaves its sift to the next operation, which
// a Release of that resource skips). It measures what the deferral costs
// where it cannot pay.
func BenchmarkAcquireReleaseExclusiveOverlapping(b *testing.B) {
	s := preloadedScheduler(b, 1, config.Exclusive)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v1, err := s.Acquire()
		if err != nil {
			b.Fatal(err)
		}
		v2, err := s.Acquire()
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Release(v1.ID); err != nil {
			b.Fatal(err)
		}
		if err := s.Release(v2.ID); err != nil {
			b.Fatal(err)
		}
	}
}
