package compare

import (
	"strconv"
	"testing"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/scheduler"
)

// The benchmarks that change the pool: Add, BatchAdd, Update. Each
// implementation has its own loop, calling its concrete type: a loop
// written once over an interface, or over a type parameter (whose methods
// Go calls through a dictionary), would add an indirect call to every
// operation and pull every ratio toward 1.

// growing returns the values Add inserts, generated before the timer
// starts: as in the seed, key "a<i>", priority i%1000.
func growing(n int) []*worker {
	ws := make([]*worker, n)
	for i := range ws {
		ws[i] = &worker{ID: "a" + strconv.Itoa(i), Priority: i % 1000}
	}
	return ws
}

// BenchmarkAdd inserts b.N resources into a pool that grows over the run.
func BenchmarkAdd(b *testing.B) {
	b.Run(implTight, func(b *testing.B) {
		p, ws := newTight(config.Shared), growing(b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := p.Add(ws[i]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(implHeap, func(b *testing.B) {
		p, ws := newHeap(config.Shared), growing(b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := p.Add(ws[i]); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, h := range heapCounts {
		b.Run(implCRS(h), func(b *testing.B) {
			s, ws := newCRS(b, h, config.Shared, nil), growing(b.N)
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

// oneBatch is the batch BatchAdd inserts: 1,000 resources, priorities 0..999.
// Every iteration inserts it into a fresh pool, so one batch serves them
// all; the seed generates a new batch per iteration, which measures the
// same thing but fills memory, and the garbage collector, with b.N batches.
func oneBatch() []*worker {
	ws := make([]*worker, batchSize)
	for j := range ws {
		ws[j] = &worker{ID: "b" + strconv.Itoa(j), Priority: j}
	}
	return ws
}

// BenchmarkBatchAdd inserts 1,000 resources into an empty pool; the pool is
// made, and the last one shut down, with the timer stopped.
func BenchmarkBatchAdd(b *testing.B) {
	b.Run(implTight, func(b *testing.B) {
		batch := oneBatch()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			p := newTight(config.Shared)
			b.StartTimer()
			if err := p.BatchAdd(batch); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(implHeap, func(b *testing.B) {
		batch := oneBatch()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			p := newHeap(config.Shared)
			b.StartTimer()
			if err := p.BatchAdd(batch); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, h := range heapCounts {
		b.Run(implCRS(h), func(b *testing.B) {
			batch := oneBatch()
			var last *scheduler.Scheduler[*worker, string]
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				if last != nil {
					last.Shutdown()
				}
				s, err := scheduler.New(crsConfig(h, config.Shared, nil))
				if err != nil {
					b.Fatal(err)
				}
				last = s
				b.StartTimer()
				if err := s.BatchAdd(batch); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			last.Shutdown()
		})
	}
}

// updateStep is the seed's Update workload: it cycles over the 10,000
// resources, each time moving one by 7919 places in the order (modulo
// 10,000), so that Update sifts as far as a typical change of priority
// would. The values are the caller's, allocated before the timer starts.
func updateStep(ws []*worker, i int) *worker {
	v := ws[i%preloaded]
	v.Priority = (v.Priority + 7919) % preloaded
	return v
}

// BenchmarkUpdate changes the priority of one of 10,000 resources.
func BenchmarkUpdate(b *testing.B) {
	b.Run(implTight, func(b *testing.B) {
		p, ws := preload(b, newTight(config.Shared)), numbered(preloaded)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := p.Update(updateStep(ws, i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(implHeap, func(b *testing.B) {
		p, ws := preload(b, newHeap(config.Shared)), numbered(preloaded)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := p.Update(updateStep(ws, i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, h := range heapCounts {
		b.Run(implCRS(h), func(b *testing.B) {
			s, ws := preload(b, newCRS(b, h, config.Shared, nil)), numbered(preloaded)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := s.Update(updateStep(ws, i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
