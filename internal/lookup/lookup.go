// Package lookup is the scheduler's key-to-node index.
package lookup

import (
	"hash/maphash"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/crsched/crs/internal/hash"
	"github.com/crsched/crs/internal/node"
)

// Map maps keys to nodes, each stored under its Key. Its reads take no
// lock and write nothing shared: Release, Update and every other call by
// key look their resource up here, so a read that locked even a reader
// count would make every such call bounce a cache line between the cores
// that make it.
//
// Keys whose type is a string or an integer kind are hashed into 32
// shards, each an open-addressing table of slots (an entry and part of
// its key's hash) that writers change under the shard's mutex and readers probe
// with atomic loads. Other key types go to one Go map under a read-write
// mutex.
//
// The batch methods lock every shard (in index order), so no other
// writer sees part of a batch. A reader may, in a shard whose table had
// room for the batch's share, for the few instructions it takes to insert
// or undo one (the scheduler keeps the batch's nodes locked meanwhile);
// in the others, InsertAll fills a new table and publishes it when the
// whole batch is in.
//
// It knows its entries are nodes, rather than taking a key function,
// because a probe compares the key of every entry it passes: read as a
// field, that is one load; through a function value, an indirect call
// the compiler cannot inline, on every Update and Release.
type Map[T any, K comparable] struct {
	hash   func(K) uint64 // nil: other key types, in other
	shards []shard[T, K]
	other  *lockedMap[T, K]
	// tomb marks a slot whose entry was deleted: a probe must go on past
	// it, since the key it looks for may have been placed further along
	// before the deletion.
	tomb *node.Node[T, K]
}

// mapShards is the number of shards for keys that hash: enough that two
// cores rarely meet on one. A key's shard is its hash's top shardBits.
const (
	shardBits = 5
	mapShards = 1 << shardBits
)

type shard[T any, K comparable] struct {
	mu sync.Mutex // held by writers
	// table is replaced, never changed in place, when it fills up: a
	// reader that loaded the old one sees the map as it was then.
	table atomic.Pointer[table[T, K]]
	// Guarded by mu.
	live int // entries
	used int // entries and tombstones: slots that are not nil
	_    [32]byte
}

// table is a power-of-two array of slots probed linearly. Writers keep at
// least half of its slots empty, so that every probe ends, and ends soon.
//
// Slot i is entries[i] and tags[i]: an entry, and the low 32 bits of its
// key's hash. A probe compares the tag before it reads the entry's key:
// the entries of the slots it passes are nodes elsewhere in memory, each
// a likely cache miss, and a probe for an absent key (every Add makes
// one) would otherwise read one per slot. The tag holds the bits that
// place the entry (a table has far fewer than 1<<32 slots), so a rebuild
// moves entries without reading their keys; two arrays rather than one
// of pairs, since a pair of a pointer and 32 bits takes 16 bytes.
//
// An entry is nil (the slot was never used), tomb, or a node. A writer
// stores the tag before the entry, and changes the tag only in a slot
// whose entry is nil or tomb, so a reader that loads the entry, then the
// tag, sees the entry's tag unless the entry was deleted in between.
//
// Once its table is published (stored in a shard's table pointer), a
// slot is read only atomically (load, tag, and probe's own loads) and
// written only by store and bury. A table being built (by refill, or by
// a batch) is seen by its builder alone and filled by set, with plain
// stores, which cost far less than atomic ones (each a locked
// instruction, and for the pointer a call into the runtime for its write
// barrier): the atomic store that publishes the table orders them before
// any reader's loads.
type table[T any, K comparable] struct {
	entries []unsafe.Pointer // *node.Node[T, K]
	tags    []uint32
	mask    uint64
}

// tagOf is the part of hash h that a slot keeps.
func tagOf(h uint64) uint32 { return uint32(h) }

func (t *table[T, K]) load(i uint64) *node.Node[T, K] {
	return (*node.Node[T, K])(atomic.LoadPointer(&t.entries[i]))
}

func (t *table[T, K]) tag(i uint64) uint32 { return atomic.LoadUint32(&t.tags[i]) }

// store fills slot i of a published table: the tag first (see table).
func (t *table[T, K]) store(i, h uint64, e *node.Node[T, K]) {
	atomic.StoreUint32(&t.tags[i], tagOf(h))
	atomic.StorePointer(&t.entries[i], unsafe.Pointer(e))
}

// bury replaces a published slot's entry with the tombstone.
func (t *table[T, K]) bury(i uint64, tomb *node.Node[T, K]) {
	atomic.StorePointer(&t.entries[i], unsafe.Pointer(tomb))
}

// set fills slot i of a table no other goroutine can see yet.
func (t *table[T, K]) set(i, h uint64, e *node.Node[T, K]) {
	t.tags[i], t.entries[i] = tagOf(h), unsafe.Pointer(e)
}

type lockedMap[T any, K comparable] struct {
	mu sync.RWMutex
	m  map[K]*node.Node[T, K]
}

// New returns an empty map.
func New[T any, K comparable]() *Map[T, K] {
	m := &Map[T, K]{tomb: new(node.Node[T, K])}
	if m.hash = hasherFor[K](maphash.MakeSeed()); m.hash != nil {
		m.shards = make([]shard[T, K], mapShards)
	} else {
		m.other = &lockedMap[T, K]{m: make(map[K]*node.Node[T, K])}
	}
	return m
}

// hasherFor returns a hash for K if its kind is a string or an integer,
// reading the key through unsafe: reflection checks the kind once here,
// and a type whose kind is string (or intN) has that kind's layout.
// The key is passed by value: a pointer into the caller's frame, passed to
// a function value, would make every looked-up key escape to the heap.
func hasherFor[K comparable](seed maphash.Seed) func(K) uint64 {
	switch reflect.TypeOf((*K)(nil)).Elem().Kind() {
	case reflect.String:
		return func(k K) uint64 { return maphash.String(seed, *(*string)(unsafe.Pointer(&k))) }
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64, reflect.Uintptr:
		return func(k K) uint64 { return hash.Mix64(*(*uint64)(unsafe.Pointer(&k))) }
	case reflect.Int32, reflect.Uint32:
		return func(k K) uint64 { return hash.Mix64(uint64(*(*uint32)(unsafe.Pointer(&k)))) }
	}
	return nil
}

// shardOf picks a shard by the hash's top bits; the table probe starts
// from its low bits.
func (m *Map[T, K]) shardOf(h uint64) *shard[T, K] { return &m.shards[h>>(64-shardBits)] }

// Get returns the entry stored under k.
func (m *Map[T, K]) Get(k K) (*node.Node[T, K], bool) {
	if m.hash == nil {
		// Deferred: hashing a key of interface type panics if its
		// dynamic type is not comparable, and the lock must not stay
		// held (the scheduler checks keys first; this is the backstop).
		m.other.mu.RLock()
		defer m.other.mu.RUnlock()
		e, ok := m.other.m[k]
		return e, ok
	}
	h := m.hash(k)
	_, e := m.probe(m.shardOf(h).table.Load(), h, k)
	return e, e != nil
}

// probe returns the slot holding k, whose hash is h, in t and its entry,
// or -1 and nil.
func (m *Map[T, K]) probe(t *table[T, K], h uint64, k K) (int, *node.Node[T, K]) {
	if t == nil {
		return -1, nil
	}
	tag := tagOf(h)
	for i := h; ; i++ {
		j := i & t.mask
		// The loads written out, not through the table's methods:
		// those would cost probe its inlining into Get, which every
		// Update and Release makes.
		e := (*node.Node[T, K])(atomic.LoadPointer(&t.entries[j]))
		if e == nil {
			return -1, nil
		}
		if e != m.tomb && atomic.LoadUint32(&t.tags[j]) == tag && e.Key == k {
			return int(j), e
		}
	}
}

// Insert stores e under k unless k is present, and reports whether it did;
// if it did not, it returns the entry stored under k.
func (m *Map[T, K]) Insert(k K, e *node.Node[T, K]) (present *node.Node[T, K], inserted bool) {
	if m.hash == nil {
		m.other.mu.Lock()
		defer m.other.mu.Unlock()
		if p, dup := m.other.m[k]; dup {
			return p, false
		}
		m.other.m[k] = e
		return nil, true
	}
	h := m.hash(k)
	s := m.shardOf(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := m.add(s, h, k, e); p != nil {
		return p, false
	}
	return nil, true
}

// add stores e under k, whose hash is h, in s unless k is present, and
// returns the entry stored under k then, or nil. One walk along the probe
// sequence both looks for k and finds the slot for e: the first tomb on
// the way, or the nil slot that ends it. Requires s.mu.
func (m *Map[T, K]) add(s *shard[T, K], h uint64, k K, e *node.Node[T, K]) *node.Node[T, K] {
	t := s.table.Load()
	if t == nil || 2*(s.used+1) > len(t.entries) {
		if _, p := m.probe(t, h, k); p != nil {
			return p // present: no room needed, no rebuild
		}
		// Four slots an entry: the table is a quarter full now and
		// grows again at half, so rebuilds are rare.
		t = m.rebuild(s, t, 4*(s.live+1))
	}
	free, found := uint64(0), false
	for i := h; ; i++ {
		j := i & t.mask
		p := t.load(j)
		if p == nil {
			if !found {
				free, found = j, true
				s.used++
			}
			break
		}
		if p == m.tomb {
			if !found {
				free, found = j, true
			}
			continue
		}
		if t.tag(j) == tagOf(h) && p.Key == k {
			return p
		}
	}
	t.store(free, h, e)
	s.live++
	return nil
}

// rebuild replaces s's table with one of at least slots slots (a power
// of two) that holds its entries, without tombstones, and returns it.
// Requires s.mu.
func (m *Map[T, K]) rebuild(s *shard[T, K], old *table[T, K], slots int) *table[T, K] {
	t := newTable[T, K](slots)
	m.refill(s, old, t)
	s.table.Store(t)
	return t
}

// newTable returns an empty table of tableSize(slots) slots.
func newTable[T any, K comparable](slots int) *table[T, K] {
	size := tableSize(slots)
	return &table[T, K]{entries: make([]unsafe.Pointer, size), tags: make([]uint32, size), mask: uint64(size - 1)}
}

// tableSize is the smallest power of two, from 8, of at least slots.
func tableSize(slots int) int {
	size := 8
	for size < slots {
		size *= 2
	}
	return size
}

// refill puts the entries of old, s's table (nil: none), into t, empty
// and not yet published, and counts no tombstones in s. Requires s.mu.
func (m *Map[T, K]) refill(s *shard[T, K], old, t *table[T, K]) {
	if old != nil {
		for i := range uint64(len(old.entries)) {
			e := old.load(i)
			if e == nil || e == m.tomb {
				continue
			}
			h := uint64(old.tag(i)) // the bits that place it: see table
			for j := h; ; j++ {
				if t.entries[j&t.mask] == nil {
					t.set(j&t.mask, h, e)
					break
				}
			}
		}
	}
	s.used = s.live
}

// FirstPresent returns the index in keys of the first key present, the
// node stored under it and whether that node was Leaving, or -1, nil and
// false: all as they were at one instant. It holds every shard's lock,
// as InsertAll does, so unlike Get it never sees a key of a batch that
// another InsertAll is putting in or taking out again (a key that batch
// may leave out in the end); and it reads Leaving under them, since at a
// later instant the keys before the one found may be back.
func (m *Map[T, K]) FirstPresent(keys []K) (int, *node.Node[T, K], bool) {
	if m.hash == nil {
		m.other.mu.RLock()
		defer m.other.mu.RUnlock()
		for i, k := range keys {
			if e, ok := m.other.m[k]; ok {
				return i, e, e.Leaving.Load()
			}
		}
		return -1, nil, false
	}
	m.lockAll()
	defer m.unlockAll()
	for i, k := range keys {
		h := m.hash(k)
		if _, e := m.probe(m.shardOf(h).table.Load(), h, k); e != nil {
			return i, e, e.Leaving.Load()
		}
	}
	return -1, nil, false
}

// lockAll locks every shard, in index order (every caller locks them in
// that order, so two batches cannot deadlock).
func (m *Map[T, K]) lockAll() {
	for i := range m.shards {
		m.shards[i].mu.Lock()
	}
}

func (m *Map[T, K]) unlockAll() {
	for i := range m.shards {
		m.shards[i].mu.Unlock()
	}
}

// Delete removes k.
func (m *Map[T, K]) Delete(k K) {
	if m.hash == nil {
		m.other.mu.Lock()
		defer m.other.mu.Unlock() // see Get
		delete(m.other.m, k)
		return
	}
	s := m.shardOf(m.hash(k))
	s.mu.Lock()
	m.remove(k)
	s.mu.Unlock()
}

// remove deletes k from a map whose keys hash. Requires k's shard's mu.
func (m *Map[T, K]) remove(k K) {
	h := m.hash(k)
	s := m.shardOf(h)
	t := s.table.Load()
	if i, _ := m.probe(t, h, k); i >= 0 {
		t.bury(uint64(i), m.tomb)
		s.live--
	}
}

// Range calls f for each entry. An entry inserted or deleted during the
// call may or may not be seen.
func (m *Map[T, K]) Range(f func(K, *node.Node[T, K])) {
	if m.hash == nil {
		m.other.mu.RLock()
		defer m.other.mu.RUnlock()
		for k, e := range m.other.m {
			f(k, e)
		}
		return
	}
	for i := range m.shards {
		t := m.shards[i].table.Load()
		if t == nil {
			continue
		}
		for j := range uint64(len(t.entries)) {
			if e := t.load(j); e != nil && e != m.tomb {
				f(e.Key, e)
			}
		}
	}
}
