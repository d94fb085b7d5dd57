// Package lookup is the scheduler's key-to-node index.
package lookup

import "sync"

// Map is a map guarded by a read-write mutex. Its batch methods check and
// insert under one lock acquisition, so a batch is either all in or not in
// at all.
type Map[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]V
}

// New returns an empty map.
func New[K comparable, V any]() *Map[K, V] {
	return &Map[K, V]{m: make(map[K]V)}
}

// Get returns the value stored under k.
func (m *Map[K, V]) Get(k K) (V, bool) {
	m.mu.RLock()
	v, ok := m.m[k]
	m.mu.RUnlock()
	return v, ok
}

// Len is the number of keys.
func (m *Map[K, V]) Len() int {
	m.mu.RLock()
	n := len(m.m)
	m.mu.RUnlock()
	return n
}

// Insert stores v under k unless k is present, and reports whether it did.
func (m *Map[K, V]) Insert(k K, v V) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.m[k]; dup {
		return false
	}
	m.m[k] = v
	return true
}

// InsertAll stores vals[i] under keys[i] for every i if none of the keys is
// present. Otherwise it stores nothing and returns the index of the first
// present key, or -1 on success. keys must not repeat.
func (m *Map[K, V]) InsertAll(keys []K, vals []V) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, k := range keys {
		if _, dup := m.m[k]; dup {
			return i
		}
	}
	for i, k := range keys {
		m.m[k] = vals[i]
	}
	return -1
}

// Delete removes k.
func (m *Map[K, V]) Delete(k K) {
	m.mu.Lock()
	delete(m.m, k)
	m.mu.Unlock()
}

// DeleteAll removes every key in keys.
func (m *Map[K, V]) DeleteAll(keys []K) {
	m.mu.Lock()
	for _, k := range keys {
		delete(m.m, k)
	}
	m.mu.Unlock()
}

// Range calls f for each entry under the read lock; f must not call m.
func (m *Map[K, V]) Range(f func(K, V)) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for k, v := range m.m {
		f(k, v)
	}
}
