// Package lookup is the scheduler's key-to-node index.
package lookup

import (
	"hash/maphash"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/crsched/crs/internal/node"
)

// Map maps keys to nodes, each stored under its Key. Its reads take no
// lock and write nothing shared: Release, Update and every other call by
// key look their resource up here, so a read that locked even a reader
// count would make every such call bounce a cache line between the cores
// that make it.
//
// Keys whose type is a string or an integer kind are hashed into 32
// shards, each an open-addressing table of slots (an entry and its key's
// hash) that writers change under the shard's mutex and readers probe
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
// the compiler cannot inline (about a tenth of an Update).
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
type table[T any, K comparable] struct {
	slots []slot[T, K]
	mask  uint64
}

// slot holds an entry and its key's hash. A probe compares the hash
// before it reads the entry's key: the entries of the slots it passes are
// nodes elsewhere in memory, each a likely cache miss, and a probe for an
// absent key (every Add makes one) would otherwise read one per slot.
//
// An entry is nil (the slot was never used), tomb, or a node. A writer
// stores hash before entry, and changes hash only in a slot whose entry
// is nil or tomb, so a reader that loads entry, then hash, sees the
// entry's hash unless the entry was deleted in between.
//
// Once its table is published (stored in a shard's table pointer), a
// slot is read only atomically (load, loadHash, and probe's own loads)
// and written only by store and bury. A table being built (by refill,
// or by a batch) is seen by its builder alone and filled by set, with
// plain stores, which cost far less than atomic ones (each a locked
// instruction, and for the pointer a call into the runtime for its write
// barrier): the atomic store that publishes the table orders them before
// any reader's loads.
type slot[T any, K comparable] struct {
	hash  uint64
	entry unsafe.Pointer // *node.Node[T, K]
}

func (sl *slot[T, K]) load() *node.Node[T, K] {
	return (*node.Node[T, K])(atomic.LoadPointer(&sl.entry))
}

func (sl *slot[T, K]) loadHash() uint64 { return atomic.LoadUint64(&sl.hash) }

// store fills a slot of a published table: hash first (see slot).
func (sl *slot[T, K]) store(h uint64, e *node.Node[T, K]) {
	atomic.StoreUint64(&sl.hash, h)
	atomic.StorePointer(&sl.entry, unsafe.Pointer(e))
}

// bury replaces a published slot's entry with the tombstone.
func (sl *slot[T, K]) bury(tomb *node.Node[T, K]) {
	atomic.StorePointer(&sl.entry, unsafe.Pointer(tomb))
}

// set fills a slot of a table no other goroutine can see yet.
func (sl *slot[T, K]) set(h uint64, e *node.Node[T, K]) { sl.hash, sl.entry = h, unsafe.Pointer(e) }

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
		return func(k K) uint64 { return mix(*(*uint64)(unsafe.Pointer(&k))) }
	case reflect.Int32, reflect.Uint32:
		return func(k K) uint64 { return mix(uint64(*(*uint32)(unsafe.Pointer(&k)))) }
	}
	return nil
}

// mix is splitmix64's finalizer: consecutive integers land far apart.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
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
	for i := h; ; i++ {
		sl := &t.slots[i&t.mask]
		// The loads written out, not through the slot's methods: those
		// would cost probe its inlining into Get, which every Update and
		// Release makes.
		e := (*node.Node[T, K])(atomic.LoadPointer(&sl.entry))
		if e == nil {
			return -1, nil
		}
		if e != m.tomb && atomic.LoadUint64(&sl.hash) == h && e.Key == k {
			return int(i & t.mask), e
		}
	}
}

// Len is the number of entries (shard by shard, so not a snapshot).
func (m *Map[T, K]) Len() int {
	if m.hash == nil {
		m.other.mu.RLock()
		defer m.other.mu.RUnlock()
		return len(m.other.m)
	}
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += s.live
		s.mu.Unlock()
	}
	return n
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
	if t == nil || 2*(s.used+1) > len(t.slots) {
		if _, p := m.probe(t, h, k); p != nil {
			return p // present: no room needed, no rebuild
		}
		// Four slots an entry: the table is a quarter full now and
		// grows again at half, so rebuilds are rare.
		t = m.rebuild(s, t, 4*(s.live+1))
	}
	var free *slot[T, K]
	for i := h; ; i++ {
		sl := &t.slots[i&t.mask]
		p := sl.load()
		if p == nil {
			if free == nil {
				free = sl
				s.used++
			}
			break
		}
		if p == m.tomb {
			if free == nil {
				free = sl
			}
			continue
		}
		if sl.loadHash() == h && p.Key == k {
			return p
		}
	}
	free.store(h, e)
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
	return &table[T, K]{slots: make([]slot[T, K], size), mask: uint64(size - 1)}
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
		for i := range old.slots {
			e := old.slots[i].load()
			if e == nil || e == m.tomb {
				continue
			}
			h := old.slots[i].loadHash()
			for j := h; ; j++ {
				if sl := &t.slots[j&t.mask]; sl.entry == nil {
					sl.set(h, e)
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
		t.slots[i].bury(m.tomb)
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
		for j := range t.slots {
			if e := t.slots[j].load(); e != nil && e != m.tomb {
				f(e.Key, e)
			}
		}
	}
}
