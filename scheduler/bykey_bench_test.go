package scheduler_test

import (
	"fmt"
	"testing"

	"github.com/crsched/crs/config"
)

// The calls that find their resource by key in the key index, beside
// Update and Release (see scheduler_bench_test.go).

func BenchmarkGet(b *testing.B) {
	for _, h := range heapCounts {
		b.Run(fmt.Sprintf("heaps=%d", h), func(b *testing.B) {
			s := preloadedScheduler(b, h, config.Shared)
			keys := numberedKeys(preloaded)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Get(keys[i%preloaded]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkGetParallel(b *testing.B) {
	for _, h := range heapCounts {
		b.Run(fmt.Sprintf("heaps=%d", h), func(b *testing.B) {
			s := preloadedScheduler(b, h, config.Shared)
			keys := numberedKeys(preloaded)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					i += 7919
					if _, err := s.Get(keys[i%preloaded]); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkRemoveAdd removes a resource and adds it back: one Delete and
// one Insert of the key index per iteration.
func BenchmarkRemoveAdd(b *testing.B) {
	for _, h := range heapCounts {
		b.Run(fmt.Sprintf("heaps=%d", h), func(b *testing.B) {
			s := preloadedScheduler(b, h, config.Shared)
			ws := numbered(preloaded)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v := ws[i%preloaded]
				if err := s.Remove(v.ID); err != nil {
					b.Fatal(err)
				}
				if err := s.Add(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func numberedKeys(n int) []string {
	ws := numbered(n)
	keys := make([]string, n)
	for i, v := range ws {
		keys[i] = v.ID
	}
	return keys
}
