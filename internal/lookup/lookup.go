// Package lookup is the scheduler's key-to-node index.
package lookup

import (
	"hash/maphash"
	"reflect"
	"sync"
	"unsafe"
)

// Map is a map split into independently locked shards by a hash of the
// key, so that lookups of different keys from different cores do not all
// write the same reader count. Keys whose type is a string or an integer
// kind are hashed directly; other key types share a single shard.
//
// Its batch methods lock every shard (in index order) and check and insert
// under those locks, so a batch is either all in or not in at all.
type Map[K comparable, V any] struct {
	shards []mapShard[K, V]
	hash   func(K) uint64 // nil: one shard
	seed   maphash.Seed
}

type mapShard[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]V
	_  [40]byte // with mu and m, one shard per 64-byte cache line
}

// mapShards is the number of shards for keys that hash: enough that two
// cores rarely meet on one.
const mapShards = 32

// New returns an empty map.
func New[K comparable, V any]() *Map[K, V] {
	m := &Map[K, V]{seed: maphash.MakeSeed()}
	m.hash = hasherFor[K](m.seed)
	n := 1
	if m.hash != nil {
		n = mapShards
	}
	m.shards = make([]mapShard[K, V], n)
	for i := range m.shards {
		m.shards[i].m = make(map[K]V)
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

func (m *Map[K, V]) shard(k K) *mapShard[K, V] {
	if m.hash == nil {
		return &m.shards[0]
	}
	return &m.shards[m.hash(k)%mapShards]
}

// Get returns the value stored under k.
func (m *Map[K, V]) Get(k K) (V, bool) {
	s := m.shard(k)
	s.mu.RLock()
	v, ok := s.m[k]
	s.mu.RUnlock()
	return v, ok
}

// Len is the number of keys (shard by shard, so not a snapshot).
func (m *Map[K, V]) Len() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.RLock()
		n += len(s.m)
		s.mu.RUnlock()
	}
	return n
}

// Insert stores v under k unless k is present, and reports whether it did;
// if it did not, it returns the value stored under k.
func (m *Map[K, V]) Insert(k K, v V) (present V, inserted bool) {
	s := m.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if present, dup := s.m[k]; dup {
		return present, false
	}
	s.m[k] = v
	return present, true
}

// InsertAll stores vals[i] under keys[i] for every i if none of the keys is
// present, and returns -1. Otherwise it stores nothing and returns the
// index of the first present key and the value stored under it. keys must
// not repeat.
func (m *Map[K, V]) InsertAll(keys []K, vals []V) (dup int, present V) {
	for i := range m.shards {
		m.shards[i].mu.Lock()
	}
	defer func() {
		for i := range m.shards {
			m.shards[i].mu.Unlock()
		}
	}()
	for i := range keys {
		if v, ok := m.shard(keys[i]).m[keys[i]]; ok {
			return i, v
		}
	}
	for i := range keys {
		m.shard(keys[i]).m[keys[i]] = vals[i]
	}
	return -1, present
}

// Delete removes k.
func (m *Map[K, V]) Delete(k K) {
	s := m.shard(k)
	s.mu.Lock()
	delete(s.m, k)
	s.mu.Unlock()
}

// DeleteAll removes every key in keys.
func (m *Map[K, V]) DeleteAll(keys []K) {
	for i := range keys {
		m.Delete(keys[i])
	}
}

// Range calls f for each entry, one shard at a time under its read lock;
// f must not call m.
func (m *Map[K, V]) Range(f func(K, V)) {
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.RLock()
		for k, v := range s.m {
			f(k, v)
		}
		s.mu.RUnlock()
	}
}
