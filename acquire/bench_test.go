package acquire_test

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/crsched/crs/acquire"
)

var (
	sinkInt    int
	sinkUint64 uint64
)

func benchStrategies() []struct {
	name     string
	strategy acquire.AcquireStrategy
} {
	return []struct {
		name     string
		strategy acquire.AcquireStrategy
	}{
		{"RoundRobin", acquire.NewRoundRobin()},
		{"Weighted", acquire.NewWeightedStrategy([]uint{1, 2, 3, 4, 5, 6, 7, 8})},
		{"Adaptive", acquire.NewAdaptiveStrategy()},
		{"Local", acquire.NewLocalStrategy()},
	}
}

func BenchmarkSelect(b *testing.B) {
	// Boxed once: converting a slice to an interface allocates, and the
	// scheduler passes one long-lived view, not a new one per call.
	var view acquire.ShardView = shardCounts{3, 1, 4, 1, 5, 9, 2, 6}
	for _, bs := range benchStrategies() {
		b.Run(bs.name, func(b *testing.B) {
			b.ReportAllocs()
			s := 0
			for range b.N {
				s += bs.strategy.Select(view)
			}
			sinkInt = s
		})
	}
}

func BenchmarkSelectParallel(b *testing.B) {
	// Boxed once: converting a slice to an interface allocates, and the
	// scheduler passes one long-lived view, not a new one per call.
	var view acquire.ShardView = shardCounts{3, 1, 4, 1, 5, 9, 2, 6}
	for _, bs := range benchStrategies() {
		b.Run(bs.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				s := 0
				for pb.Next() {
					s += bs.strategy.Select(view)
				}
				_ = s
			})
		})
	}
}

// BenchmarkFloor measures, in the same run as BenchmarkSelect, the one
// step each strategy cannot do without, so that Select's cost can be read
// against what this machine charges for it: RoundRobin's locked add on a
// shared counter (exact rotation needs one), and the runtime's per-thread
// random draw that WeightedStrategy and AdaptiveStrategy make; the draw
// also under b.RunParallel, where each P draws from its own thread's
// source, so that the parallel adaptive Acquire has a floor too.
func BenchmarkFloor(b *testing.B) {
	b.Run("AtomicAdd", func(b *testing.B) {
		var c struct {
			_ [56]byte
			n atomic.Uint64
			_ [56]byte
		}
		b.ReportAllocs()
		for range b.N {
			sinkUint64 += c.n.Add(1)
		}
	})
	b.Run("RandUint64", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			sinkUint64 += rand.Uint64()
		}
	})
	b.Run("RandUint64Parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var s uint64
			for pb.Next() {
				s += rand.Uint64()
			}
			atomic.AddUint64(&sinkUint64, s)
		})
	})
}

func BenchmarkGetShard(b *testing.B) {
	r := acquire.NewConsistentHashRing(8)
	b.ReportAllocs()
	h, s := uint64(0), 0
	for range b.N {
		// A Weyl sequence: cheap, and it visits hashes all over the ring.
		h += 0x9e3779b97f4a7c15
		s += r.GetShard(h)
	}
	sinkInt = s
}

func BenchmarkHashIdentifier(b *testing.B) {
	ids := []struct {
		name string
		id   acquire.AffinityIdentifier
	}{
		{"StringIdentifier", acquire.StringIdentifier("user-12345")},
		{"OtherIdentifier", bytesIdentifier("user-12345")},
	}
	for _, tt := range ids {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			var h uint64
			for range b.N {
				h += acquire.HashIdentifier(tt.id)
			}
			sinkUint64 = h
		})
	}
}
