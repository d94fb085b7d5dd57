package scheduler_test

import (
	"fmt"
	"testing"

	"github.com/crsched/crs/config"
)

// BenchmarkUpdateAtScale changes the priority of one of 100,000
// resources in 8 shards to a new random one: at this size the nodes and
// the lookup tables are far larger than the caches, so it measures what
// an Update's memory accesses cost more than its instructions.
func BenchmarkUpdateAtScale(b *testing.B) {
	const resources, heaps = 100_000, 8
	b.Run(fmt.Sprintf("resources=%d/heaps=%d", resources, heaps), func(b *testing.B) {
		ws := numbered(resources)
		x := uint64(0x9e3779b97f4a7c15)
		next := func() uint64 { // xorshift: the same sequence in every run
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			return x
		}
		for _, v := range ws {
			v.Priority = int(next() % resources)
		}
		s := newScheduler(b, baseConfig(heaps, config.Shared))
		if err := s.BatchAdd(ws); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			r := next()
			v := ws[r%resources]
			v.Priority = int(r >> 32 % resources)
			if err := s.Update(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
