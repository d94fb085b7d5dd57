package compare

import (
	"sync"
	"testing"

	"github.com/crsched/crs/internal/heap"
	"github.com/crsched/crs/internal/lookup"
	"github.com/crsched/crs/internal/node"
)

// The floors: the steps an operation cannot do without, each timed alone
// on crs's own structures (its key index, its nodes, its heaps at
// HeapCount 8), so that the report can set each target beside what its
// necessary work costs in the same run. They are not crs: they skip every
// check the scheduler makes and everything it keeps beside the heap, and
// are right only for these workloads.

const floorHeaps = 8

type floorNode = node.Node[*worker, string]

// fillNodes gives slab's nodes the batch's values, keys and shards (i
// modulo floorHeaps, as the scheduler's rotation would): the set-up every
// node needs before the index and the heaps can take it.
func fillNodes(slab []floorNode, vs []*worker) {
	for i, v := range vs {
		n := &slab[i]
		n.Key, n.Index, n.Shard, n.Capacity = v.ID, -1, int32(i%floorHeaps), 1
		n.Init(v, true)
	}
}

type floorHeapSet = [floorHeaps]heap.Heap[*worker, string]

// orderNodes puts slab's nodes in the empty heaps hs by their shards and
// orders each in O(n), as BatchAdd does into empty shards.
func orderNodes(hs *floorHeapSet, slab []floorNode) {
	for k := range hs {
		hs[k] = heap.New[*worker, string](byPriority, false)
		hs[k].Grow(len(slab)/floorHeaps + 1)
	}
	for i := range slab {
		hs[slab[i].Shard].Append(&slab[i])
	}
	for k := range hs {
		hs[k].Init()
	}
}

// index inserts slab's nodes into the key index m, failing b on a
// duplicate.
func index(b *testing.B, m *lookup.Map[*worker, string], slab []floorNode) {
	if dup, _, _ := m.InsertAll(slab); dup >= 0 {
		b.Fatalf("key %q taken", slab[dup].Key)
	}
}

// BenchmarkFloorBatchAdd times BatchAdd's three structures for a batch of
// 1,000 into an empty pool: the nodes (one slab, allocated and filled),
// the key index (which must see every key to refuse a duplicate), and the
// heaps; each alone, and all three. gomap is the index's work done by a
// Go map instead (sized up front, looked up then assigned: the tight
// pool's), for what a key index costs in Go.
func BenchmarkFloorBatchAdd(b *testing.B) {
	batch := oneBatch()
	filled := make([]floorNode, len(batch))
	fillNodes(filled, batch)
	b.Run("part=nodes", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			fillNodes(make([]floorNode, len(batch)), batch)
		}
	})
	b.Run("part=index", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			b.StopTimer() // a pool makes its index when it is made
			m := lookup.New[*worker, string]()
			b.StartTimer()
			index(b, m, filled)
		}
	})
	b.Run("part=gomap", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			m := make(map[string]*floorNode, len(filled))
			for i := range filled {
				n := &filled[i]
				if _, dup := m[n.Key]; dup {
					b.Fatalf("key %q taken", n.Key)
				}
				m[n.Key] = n
			}
		}
	})
	b.Run("part=heaps", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			var hs floorHeapSet
			orderNodes(&hs, filled)
		}
	})
	b.Run("part=all", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			b.StopTimer()
			m := lookup.New[*worker, string]()
			b.StartTimer()
			slab := make([]floorNode, len(batch))
			fillNodes(slab, batch)
			index(b, m, slab)
			var hs floorHeapSet
			orderNodes(&hs, slab)
		}
	})
}

// floorPool is BenchmarkUpdate's 10,000 preloaded resources in crs's
// structures, with a lock for each heap on a cache line of its own, as
// each shard's.
type floorPool struct {
	index *lookup.Map[*worker, string]
	heaps floorHeapSet
	locks [floorHeaps]struct {
		sync.Mutex
		_ [56]byte
	}
}

func newFloorPool(b *testing.B) *floorPool {
	ws := numbered(preloaded)
	slab := make([]floorNode, len(ws))
	fillNodes(slab, ws)
	p := &floorPool{index: lookup.New[*worker, string]()}
	index(b, p.index, slab)
	orderNodes(&p.heaps, slab)
	return p
}

// BenchmarkFloorUpdate times the steps of BenchmarkUpdate's workload that
// any Update must take, each on a pool of its own: find the node by key;
// then also, under its heap's lock, set its value and restore the heap's
// order. No state, capacity or rate-limit check, no undo for a panicking
// comparator, no publication to lock-free readers, no waiter or event.
func BenchmarkFloorUpdate(b *testing.B) {
	b.Run("part=find", func(b *testing.B) {
		p, ws := newFloorPool(b), numbered(preloaded)
		b.ResetTimer()
		for i := range b.N {
			if _, ok := p.index.Get(updateStep(ws, i).ID); !ok {
				b.Fatal("key not found")
			}
		}
	})
	b.Run("part=find+lock+fix", func(b *testing.B) {
		p, ws := newFloorPool(b), numbered(preloaded)
		b.ResetTimer()
		for i := range b.N {
			v := updateStep(ws, i)
			n, _ := p.index.Get(v.ID)
			l := &p.locks[n.Shard]
			l.Lock()
			n.Stage(v)
			p.heaps[n.Shard].Fix(n)
			l.Unlock()
		}
	})
}
