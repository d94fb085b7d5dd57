package shard

import "github.com/crsched/crs/internal/node"

// Batch is the shards a batch of new nodes touches (Touched), which
// LockBatch locks in ascending order and opens a change in, and how far
// each of its loops got, since repair runs the comparator, which may
// panic: one deferred UnlockBatch then undoes what was done. (A defer
// inside a loop is allocated on the heap, for every shard of every
// batch.)
type Batch struct {
	Touched       func(int) bool
	locked, begun int
}

// LockBatch locks the shards b touches, in ascending order so that two
// batches cannot deadlock, has repair bring each back to normal, and
// opens a change in each. Defer UnlockBatch before calling it.
func LockBatch[T any, ID comparable](shards []Shard[T, ID], b *Batch, repair func(*Shard[T, ID])) {
	for i := range shards {
		if b.Touched(i) {
			shards[i].Lock()
		}
		b.locked = i + 1
	}
	for i := range shards {
		if b.Touched(i) {
			repair(&shards[i])
			shards[i].Begin()
		}
		b.begun = i + 1
	}
}

// UnlockBatch closes the changes LockBatch opened and unlocks the shards
// it locked, however far it got.
func UnlockBatch[T any, ID comparable](shards []Shard[T, ID], b *Batch) {
	for i := range b.begun {
		if b.Touched(i) {
			shards[i].End()
		}
	}
	for i := range b.locked {
		if b.Touched(i) {
			shards[i].Unlock()
		}
	}
}

// AddBatch puts a batch that is in the lookup map into its shards'
// heaps, orders and publishes them, and returns how many nodes went into
// each shard; the shards must be locked (LockBatch). If the comparator
// panics, every shard of the batch is left broken, and its undo takes
// its part of the batch out of the heap and the map again (see
// Shard.SaveBatch): nothing of it was visible.
func AddBatch[T any, ID comparable](shards []Shard[T, ID], slab []node.Node[T, ID]) []int {
	added := make([]int, len(shards))
	for i := range slab {
		added[slab[i].Shard]++
	}
	for i, k := range added {
		if k > 0 {
			shards[i].SaveBatch(slab)
			shards[i].Risk()
			shards[i].Heap.Grow(k)
		}
	}
	for i := range slab {
		n := &slab[i]
		shards[n.Shard].Heap.Append(n)
		n.State = node.Active
	}
	for i, k := range added {
		if k > 0 {
			shards[i].Order(k)
		}
	}
	for i, k := range added {
		if k > 0 {
			shards[i].Safe()
			shards[i].Commit()
			shards[i].Publish()
		}
	}
	return added
}

// SlabOrder returns where in a slab of n nodes, assigned to shards in
// rotation, the i-th goes: grouped by shard, so that nodes next to each
// other in memory belong to one shard. A node is not a whole number of
// cache lines, so otherwise nodes of different shards would share lines,
// and goroutines working in different shards would write to one line
// (false sharing).
func SlabOrder(n, shards int) func(i int) int {
	return func(i int) int {
		// The nodes with i % shards == r go to one shard; there are
		// n/shards of them, plus one if r < n%shards. Those of every
		// smaller r come first.
		r := i % shards
		return r*(n/shards) + min(r, n%shards) + i/shards
	}
}

// InSlabOrder calls f(i, SlabOrder(n, shards)(i), i%shards) for each i
// in [0, n), in the order of the second argument: it walks the slab
// front to back without SlabOrder's divisions.
func InSlabOrder(n, shards int, f func(i, at, offset int)) {
	at := 0
	for offset := 0; offset < min(shards, n); offset++ {
		for i := offset; i < n; i += shards {
			f(i, at, offset)
			at++
		}
	}
}
