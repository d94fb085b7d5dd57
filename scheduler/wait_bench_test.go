package scheduler_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/crsched/crs/config"
)

// BenchmarkUncontended times the three ways to take an exclusive
// resource and give it back when one is free (10,000 preloaded, one
// goroutine): Acquire and Release, AcquireContext and Release, Lease and
// its Release. The op is the last element of the name, so that
//
//	benchstat -col /op out.txt
//
// gives the ratio of each to Acquire.
func BenchmarkUncontended(b *testing.B) {
	for _, h := range []int{1, 8} {
		ctx := context.Background()
		b.Run(fmt.Sprintf("heaps=%d/op=acquire", h), func(b *testing.B) {
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
		b.Run(fmt.Sprintf("heaps=%d/op=context", h), func(b *testing.B) {
			s := preloadedScheduler(b, h, config.Exclusive)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v, err := s.AcquireContext(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Release(v.ID); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("heaps=%d/op=lease", h), func(b *testing.B) {
			s := preloadedScheduler(b, h, config.Exclusive)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
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
