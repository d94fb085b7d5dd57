package lookup

import (
	"testing"

	"github.com/crsched/crs/internal/node"
)

// twoShards sends even keys to shard 0 and odd keys to shard 1, so that a
// test decides which shard has a table with room and which has none.
func twoShards(m *Map[int, int]) {
	m.hash = func(k int) uint64 { return uint64(k&1)<<59 | uint64(k) }
}

// tables returns every shard's published table and counts.
func tables(m *Map[int, int]) (ts [mapShards]*table[int, int], counts [mapShards][2]int) {
	for i := range m.shards {
		s := &m.shards[i]
		ts[i], counts[i] = s.table.Load(), [2]int{s.live, s.used}
	}
	return ts, counts
}

// A batch that meets a taken key leaves the map as it was: the keys it
// put into a published table are taken out again, and the tables it
// built for shards without room are never published, so no reader saw
// its entries there and the counts are the old ones.
func TestAFailedBatchLeavesEveryTableAsItWas(t *testing.T) {
	m := newMap[int]()
	twoShards(m)
	m.Insert(0, newItem(0, 0)) // shard 0 gets a table with room to spare
	beforeTables, beforeCounts := tables(m)
	batch := make([]node.Node[int, int], 41)
	for i := range batch {
		batch[i] = node.Node[int, int]{Key: i + 2, Value: i + 2}
	}
	batch[40].Key = 0 // taken: the batch fails at its last entry
	if dup, present, _ := m.InsertAll(batch); dup != 40 || present == nil || present.Value != 0 {
		t.Fatalf("InsertAll ending in a taken key = %d, %v; want 40 and the entry of key 0", dup, present)
	}
	afterTables, afterCounts := tables(m)
	if afterTables[1] != beforeTables[1] || afterTables[1] != nil {
		t.Fatal("the failed batch published a table for shard 1, which had none")
	}
	for i := 2; i < mapShards; i++ {
		if afterTables[i] != nil {
			t.Fatalf("the failed batch published a table for shard %d", i)
		}
	}
	if afterCounts[1] != beforeCounts[1] || afterCounts[0][0] != beforeCounts[0][0] {
		t.Fatalf("counts (live, used) were %v and %v, are %v and %v", beforeCounts[0], beforeCounts[1], afterCounts[0], afterCounts[1])
	}
	for i := range batch[:40] {
		if _, ok := m.Get(batch[i].Key); ok {
			t.Fatalf("key %d of the failed batch is in", batch[i].Key)
		}
	}
	if e, ok := m.Get(0); !ok || e.Value != 0 || m.Len() != 1 {
		t.Fatalf("after the failed batch: Get(0) = %v, %v and Len = %d; want the old entry alone", e, ok, m.Len())
	}
	batch[40].Key = 42
	if dup, _, _ := m.InsertAll(batch); dup != -1 || m.Len() != 42 {
		t.Fatalf("the same batch without the taken key: %d, Len %d; want -1, 42", dup, m.Len())
	}
}

// Keys that crowd into one shard, all with one hash, get a table sized
// for all of them (a batch counts each shard's share, so it never grows
// a table it built): the batch finds a key repeated within it, and
// otherwise puts every key in, at most half a table full.
func TestABatchCrowdedIntoOneShardGetsATableForAllOfIt(t *testing.T) {
	m := newMap[int]()
	sameHash(m)
	batch := make([]node.Node[int, int], 300)
	for i := range batch {
		batch[i] = node.Node[int, int]{Key: i, Value: i}
	}
	batch[299].Key = 7
	if dup, present, _ := m.InsertAll(batch); dup != 299 || present != &batch[7] {
		t.Fatalf("InsertAll repeating key 7 at 299 = %d, %p; want 299 and %p", dup, present, &batch[7])
	}
	if s := m.shardOf(42); s.table.Load() != nil || s.live != 0 || s.used != 0 || m.Len() != 0 {
		t.Fatalf("the failed batch left a table or counts (%d, %d) behind", s.live, s.used)
	}

	m.Insert(-1, newItem(-1, -1))
	batch[299].Key = 299
	if dup, _, _ := m.InsertAll(batch); dup != -1 {
		t.Fatalf("InsertAll of fresh keys in one shard returned %d", dup)
	}
	for _, k := range []int{-1, 0, 150, 299} {
		if e, ok := m.Get(k); !ok || e.Value != k {
			t.Fatalf("Get(%d) = %v, %v after the batch", k, e, ok)
		}
	}
	s := m.shardOf(42)
	if n := len(s.table.Load().entries); s.live != 301 || 2*s.used > n {
		t.Fatalf("shard holds %d entries, %d used of %d slots; want 301, at most half", s.live, s.used, n)
	}
}

// InsertAll makes room for its batch once, keeping every table at most
// half full, and no more: each shard's table is the smallest power of two
// that holds its share of the batch at half full, not the slack for
// growth that a single Insert's rebuild leaves (about 8 slots an entry)
// nor an estimate of the share rounded up.
func TestInsertAllSizesTablesForTheBatch(t *testing.T) {
	m := newMap[int]()
	batch := make([]node.Node[int, int], 120_000) // a share near 3/4 of a power of two
	for i := range batch {
		batch[i] = node.Node[int, int]{Key: i, Value: i}
	}
	if dup, _, _ := m.InsertAll(batch); dup != -1 {
		t.Fatalf("InsertAll of fresh keys returned %d", dup)
	}
	slots := 0
	for i := range m.shards {
		s := &m.shards[i]
		n := len(s.table.Load().entries)
		if 2*s.used > n {
			t.Fatalf("shard %d: %d entries in %d slots, more than half full", i, s.used, n)
		}
		if n > 8 && s.used <= n/4 {
			t.Fatalf("shard %d: %d entries in %d slots, when half as many would hold them", i, s.used, n)
		}
		slots += n
	}
	if slots > 4*len(batch) {
		t.Fatalf("%d slots for a batch of %d", slots, len(batch))
	}
}
