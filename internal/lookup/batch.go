package lookup

import (
	"unsafe"

	"github.com/crsched/crs/internal/node"
)

// InsertAll stores every &es[i] under its key if none of the keys is
// present and none repeats, and returns -1. Otherwise it stores nothing
// and returns the first index whose key is present, or repeats an
// earlier one, the entry stored under that key then (&es[j] for a
// repeat of es[j]'s key) and whether that entry was Leaving then. It
// takes the entries themselves, not pointers to them, so that a caller
// that made them in one slab needs no second slice. Every shard stays
// locked from the first insert to the last, or to the undoing.
func (m *Map[T, K]) InsertAll(es []node.Node[T, K]) (dup int, present *node.Node[T, K], leaving bool) {
	if m.hash == nil {
		m.other.mu.Lock()
		defer m.other.mu.Unlock()
		for i := range es {
			k := es[i].Key
			if p, ok := m.other.m[k]; ok {
				for j := range es[:i] {
					delete(m.other.m, es[j].Key)
				}
				return i, p, p.Leaving.Load()
			}
			m.other.m[k] = &es[i]
		}
		return -1, nil, false
	}
	m.lockAll()
	defer m.unlockAll()
	var b batch[T, K]
	b.prepare(m, es)
	for i := range es {
		e := &es[i]
		if p := b.add(m, m.hash(e.Key), e); p != nil {
			b.discard(m, es[:i])
			return i, p, p.Leaving.Load()
		}
	}
	b.publish(m)
	return -1, nil, false
}

// batch is an InsertAll under way, with every shard locked. A shard
// without room for its share of the batch gets a new table, which the
// batch fills and publishes only once all of it is in: until then
// readers see the old table, a batch that fails drops the new one with
// nothing to undo, and its slots take plain stores (see table).
type batch[T any, K comparable] struct {
	// fresh[i] is shard i's new table; nil: the batch goes into the
	// published one.
	fresh [mapShards]*table[T, K]
	// was[i] is shard i's counts before the batch, restored if it fails.
	was [mapShards]struct{ live, used int }
}

// prepare gives a new table to each shard whose table lacks room for its
// share of es, counted: making room up front spares the batch a rebuild
// at every doubling. Only as much as keeps a table at most half full (the
// bound add keeps): a batch knows its size, so the slack that add leaves
// for growth would be memory that a large batch may never use, and an
// estimate of a shard's share would have to round up.
//
// The new tables share one allocation for their entries, one for their
// tags and one for their headers, instead of two a table, as the
// scheduler makes one for a batch's nodes. The price: a table replaced
// later keeps its part of the slots alive until the batch's other tables
// are replaced too, at most as much memory as the batch's tables took.
func (b *batch[T, K]) prepare(m *Map[T, K], es []node.Node[T, K]) {
	var share [mapShards]int
	for i := range es {
		share[m.hash(es[i].Key)>>(64-shardBits)]++
	}
	var sizes [mapShards]int // of the new tables; 0: none
	total, count := 0, 0
	for i := range m.shards {
		s := &m.shards[i]
		if t := s.table.Load(); share[i] > 0 && (t == nil || 2*(s.used+share[i]) > len(t.entries)) {
			sizes[i] = tableSize(2 * (s.live + share[i]))
			total += sizes[i]
			count++
		}
	}
	if count == 0 {
		return
	}
	entries, tags, tables := make([]unsafe.Pointer, total), make([]uint32, total), make([]table[T, K], count)
	for i, size := range sizes {
		if size == 0 {
			continue
		}
		s, t := &m.shards[i], &tables[0]
		t.entries, t.tags, t.mask = entries[:size:size], tags[:size:size], uint64(size-1)
		entries, tags, tables = entries[size:], tags[size:], tables[1:]
		b.was[i].live, b.was[i].used = s.live, s.used
		m.refill(s, s.table.Load(), t)
		b.fresh[i] = t
	}
}

// add is Map.add for the batch: into the shard's new table, if it has
// one, else into its published table. prepare made room for the whole
// batch in either.
func (b *batch[T, K]) add(m *Map[T, K], h uint64, e *node.Node[T, K]) *node.Node[T, K] {
	i := h >> (64 - shardBits)
	s, t := &m.shards[i], b.fresh[i]
	if t == nil {
		return m.add(s, h, e.Key, e)
	}
	// A new table has no tombstones: refill leaves them behind, and
	// nothing deletes from it.
	for j := h; ; j++ {
		p := (*node.Node[T, K])(t.entries[j&t.mask])
		if p == nil {
			t.set(j&t.mask, h, e)
			s.used++
			s.live++
			return nil
		}
		if t.tags[j&t.mask] == tagOf(h) && p.Key == e.Key {
			return p
		}
	}
}

// discard undoes a batch that met a taken key after inserting es: it
// takes them out of the published tables and drops the new ones.
func (b *batch[T, K]) discard(m *Map[T, K], es []node.Node[T, K]) {
	for j := range es {
		if b.fresh[m.hash(es[j].Key)>>(64-shardBits)] == nil {
			m.remove(es[j].Key)
		}
	}
	for i, t := range b.fresh {
		if t != nil {
			m.shards[i].live, m.shards[i].used = b.was[i].live, b.was[i].used
		}
	}
}

// publish makes the new tables the shards' tables.
func (b *batch[T, K]) publish(m *Map[T, K]) {
	for i, t := range b.fresh {
		if t != nil {
			m.shards[i].table.Store(t)
		}
	}
}
