package scheduler

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/internal/hash"
	"github.com/crsched/crs/internal/maglev"
	"github.com/crsched/crs/internal/node"
)

// affinity maps identifiers to resources, so that AcquireByAffinity keeps
// returning the same resource to the same identifier. It is a Maglev table
// over the resources, keyed by a hash of each resource's key: changes of
// priority do not touch it, and a resource added or removed moves few of
// the other resources' identifiers. Each resource owns about the same
// number of slots, so identifiers spread evenly.
//
// The table is rebuilt lazily, on the first affinity acquisition after
// the set of resources changed, so Add and Remove pay one atomic load.
type affinity[T any, ID comparable] struct {
	mu    sync.Mutex // serializes rebuilds
	table atomic.Pointer[affinityTable[T, ID]]
	stale atomic.Bool // resources added or removed since the table was built
}

// affinityTable is immutable once built.
type affinityTable[T any, ID comparable] struct {
	slots []int32
	nodes []*node.Node[T, ID]
}

// membershipChanged marks the affinity table stale.
func (s *Scheduler[T, ID]) membershipChanged() {
	if !s.affinity.stale.Load() {
		s.affinity.stale.Store(true)
	}
}

// affinityTable returns a table that includes every resource added before
// the call, building one if needed.
func (s *Scheduler[T, ID]) affinityTable() *affinityTable[T, ID] {
	a := &s.affinity
	if t := a.table.Load(); t != nil && !a.stale.Load() {
		return t
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if t := a.table.Load(); t != nil && !a.stale.Load() {
		return t
	}
	a.stale.Store(false) // changes from here on mark it stale again
	type entry struct {
		hash uint64
		n    *node.Node[T, ID]
	}
	var entries []entry
	s.nodes.Range(func(k ID, n *node.Node[T, ID]) {
		entries = append(entries, entry{keyHash(k), n})
	})
	// The map's order is random; the table must not be.
	slices.SortFunc(entries, func(a, b entry) int { return cmp.Compare(a.hash, b.hash) })
	t := &affinityTable[T, ID]{nodes: make([]*node.Node[T, ID], len(entries))}
	hashes := make([]uint64, len(entries))
	for i, e := range entries {
		t.nodes[i], hashes[i] = e.n, e.hash
	}
	t.slots = maglev.Build(hashes, maglev.Size(len(entries)))
	a.table.Store(t)
	return t
}

// sweepAffinity takes a hold on the resource the identifier maps to, or,
// while that one is unavailable, on the next available one in the
// identifier's slot order: a deterministic fallback. It gives up after a
// bounded number of probes (the caller then takes any resource).
func (s *Scheduler[T, ID]) sweepAffinity(id acquire.AffinityIdentifier, lease bool) (grant[T, ID], bool) {
	t := s.affinityTable()
	if len(t.nodes) == 0 {
		return grant[T, ID]{}, false
	}
	m := len(t.slots)
	slot := maglev.Slot(acquire.HashIdentifier(id), m)
	var last *node.Node[T, ID]
	for probe, tries := 0, 0; probe < m && tries < maxAffinityTries; probe++ {
		n := t.nodes[t.slots[(slot+probe)%m]]
		if n == last {
			continue
		}
		last = n
		tries++
		if g, ok := s.takeNode(n, lease); ok {
			return s.acquired(g), true
		}
	}
	return grant[T, ID]{}, false
}

// maxAffinityTries bounds the resources an affinity acquisition tries in
// slot order before it settles for any available resource.
const maxAffinityTries = 16

// takeNode takes a hold on n if it is available.
func (s *Scheduler[T, ID]) takeNode(n *node.Node[T, ID], lease bool) (grant[T, ID], bool) {
	sh := &s.shards[n.Shard]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s.mend(sh)
	if n.State != node.Active {
		return grant[T, ID]{}, false
	}
	return s.hold(sh, n, lease), true
}

// keyHash hashes a resource key stably across runs: directly for strings
// and integers, through its printed form for other key types (only when
// the affinity table is rebuilt).
func keyHash[ID comparable](k ID) uint64 {
	switch v := any(k).(type) {
	case string:
		return hash.String(v)
	case int:
		return hash.Mix64(uint64(v))
	case int64:
		return hash.Mix64(uint64(v))
	case int32:
		return hash.Mix64(uint64(v))
	case uint:
		return hash.Mix64(uint64(v))
	case uint64:
		return hash.Mix64(v)
	case uint32:
		return hash.Mix64(uint64(v))
	}
	return hash.String(fmt.Sprintf("%#v", k))
}
