package lookup

// Len is the number of entries (shard by shard, so not a snapshot). Only
// the tests count them: the scheduler keeps its own count.
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
