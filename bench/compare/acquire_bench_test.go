package compare

import (
	"testing"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
)

// The Acquire benchmarks, against 10,000 pre-loaded resources: shared
// (the best stays in the pool) and exclusive Acquire + Release, each from
// one goroutine and under b.RunParallel. As in mutate_bench_test.go, each
// implementation has its own loop over its concrete type.

// BenchmarkAcquireShared reads the best resource, crs with each of
// sharedStrategies.
func BenchmarkAcquireShared(b *testing.B) {
	b.Run(implTight, func(b *testing.B) {
		p := preload(b, newTight(config.Shared))
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := p.Acquire(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(implHeap, func(b *testing.B) {
		p := preload(b, newHeap(config.Shared))
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := p.Acquire(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, st := range sharedStrategies {
		for _, h := range heapCounts {
			b.Run(st.name(h), func(b *testing.B) {
				s := preload(b, newCRS(b, h, config.Shared, st.strategy()))
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
}

// namedStrategy is a strategy crs runs a benchmark with, and the name of
// its sub-benchmarks; a nil strategy is the default round robin.
type namedStrategy struct {
	name     func(heaps int) string
	strategy func() acquire.AcquireStrategy
}

// sharedStrategies are the strategies shared Acquire runs with: the
// default round robin (one locked add a call) and the adaptive strategy
// (one random draw a call, and no shared write). Sequentially, the
// difference between heaps=1, where neither strategy does anything, and
// heaps=8 is what the strategy costs a call.
var sharedStrategies = []namedStrategy{
	{implCRS, func() acquire.AcquireStrategy { return nil }},
	{implCRSAdaptive, func() acquire.AcquireStrategy { return acquire.NewAdaptiveStrategy() }},
}

// BenchmarkAcquireSharedParallel reads the best resource from every P at
// once, crs with each of sharedStrategies: round robin's counter is a line
// every P writes, the adaptive strategy writes nothing shared.
func BenchmarkAcquireSharedParallel(b *testing.B) {
	b.Run(implTight, func(b *testing.B) {
		p := preload(b, newTight(config.Shared))
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := p.Acquire(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run(implHeap, func(b *testing.B) {
		p := preload(b, newHeap(config.Shared))
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := p.Acquire(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	for _, st := range sharedStrategies {
		for _, h := range heapCounts {
			b.Run(st.name(h), func(b *testing.B) {
				s := preload(b, newCRS(b, h, config.Shared, st.strategy()))
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
}

// BenchmarkAcquireReleaseExclusive takes the best resource and puts it
// back, crs with each of exclusiveStrategies.
func BenchmarkAcquireReleaseExclusive(b *testing.B) {
	b.Run(implTight, func(b *testing.B) {
		p := preload(b, newTight(config.Exclusive))
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			v, err := p.Acquire()
			if err != nil {
				b.Fatal(err)
			}
			if err := p.Release(v.ID); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(implHeap, func(b *testing.B) {
		p := preload(b, newHeap(config.Exclusive))
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			v, err := p.Acquire()
			if err != nil {
				b.Fatal(err)
			}
			if err := p.Release(v.ID); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, st := range exclusiveStrategies {
		for _, h := range heapCounts {
			b.Run(st.name(h), func(b *testing.B) {
				s := preload(b, newCRS(b, h, config.Exclusive, st.strategy()))
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
}

// exclusiveStrategies are the strategies exclusive Acquire + Release
// runs with: the default round robin, and the local strategy, which
// keeps each P in a shard of its own (in parallel, each core's shard
// stays in its cache).
var exclusiveStrategies = []namedStrategy{
	{implCRS, func() acquire.AcquireStrategy { return nil }},
	{implCRSLocal, func() acquire.AcquireStrategy { return acquire.NewLocalStrategy() }},
}

// BenchmarkAcquireReleaseExclusiveParallel takes and puts back the best
// resource from every P at once, crs with each of exclusiveStrategies.
func BenchmarkAcquireReleaseExclusiveParallel(b *testing.B) {
	b.Run(implTight, func(b *testing.B) {
		p := preload(b, newTight(config.Exclusive))
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				v, err := p.Acquire()
				if err != nil {
					b.Error(err)
					return
				}
				if err := p.Release(v.ID); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run(implHeap, func(b *testing.B) {
		p := preload(b, newHeap(config.Exclusive))
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				v, err := p.Acquire()
				if err != nil {
					b.Error(err)
					return
				}
				if err := p.Release(v.ID); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	for _, st := range exclusiveStrategies {
		for _, h := range heapCounts {
			b.Run(st.name(h), func(b *testing.B) {
				s := preload(b, newCRS(b, h, config.Exclusive, st.strategy()))
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
}
