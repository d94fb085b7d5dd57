package compare

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// BenchmarkLineRoundTrip times what the host charges to move one cache
// line from a core to another and back: one goroutine writes a counter,
// a second waits to see it and writes it back, b.N times. Every line that
// goroutines on two cores write in turn pays this, so the parallel rows
// move with it, crs's more than the baselines', whose one lock keeps
// their work on one core at a time. On a virtual machine it depends on
// where the hypervisor has put the two virtual CPUs at the moment, which
// can change from one minute to the next; timing it in every round says
// which placement each round ran on (docs/BENCHMARKS.md).
func BenchmarkLineRoundTrip(b *testing.B) {
	if runtime.GOMAXPROCS(0) < 2 {
		b.Skip("needs GOMAXPROCS >= 2: the two goroutines wait by spinning")
	}
	var line struct {
		_ [56]byte
		n atomic.Int64
		_ [56]byte
	}
	// The first goroutine writes the odd values, the second the even
	// ones; each spins until the line brings the other's.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := int64(1); i <= int64(b.N); i++ {
			for line.n.Load() != 2*i-1 {
			}
			line.n.Store(2 * i)
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	for i := int64(1); i <= int64(b.N); i++ {
		line.n.Store(2*i - 1)
		for line.n.Load() != 2*i {
		}
	}
	<-done
}
