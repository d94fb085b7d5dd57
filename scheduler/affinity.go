package scheduler

import (
	"cmp"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/internal/hash"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/ring"
	"github.com/crsched/crs/internal/waiting"
)

// affinity maps identifiers to resources, so that AcquireByAffinity keeps
// returning the same resource to the same identifier. Each resource has
// one point on a consistent-hash ring, at its key's hash; an identifier's
// candidates are the affinityWindow points that follow its own hash
// clockwise, and of those it prefers the one it ranks highest (rank, a
// hash of the identifier and the point: rendezvous hashing within the
// window). A resource's share is then the average of the affinityWindow
// arcs before its point, which is what makes shares even with one point
// per resource; a resource added or removed changes only the windows that
// hold its point, and in those only the identifiers that rank it first.
//
// The ring is built on the first affinity acquisition, and from then on
// kept up to date by Add, BatchAdd and Remove. Its points are in the
// order of their keys' hashes, so it is a function of the set of keys:
// schedulers holding the same keys map identifiers alike, whatever the
// order they were added in.
//
// Invariant: once the ring is built, after every change of the lookup map
// or of a node's Leaving flag (but the deletion of a leaving node, which
// the ring no longer holds), the changing goroutine calls
// resourcesChanged with the key; that call, holding mu, sets the ring to
// hold the point of the key's current node if it is in the map and not
// leaving, and no point for the key otherwise.
type affinity[T any, ID comparable] struct {
	// mu serializes changes to the ring. It is taken with no shard lock
	// held, and under it only the lookup map's lock is taken.
	mu sync.Mutex
	// ring is nil until the first affinity acquisition, then replaced
	// whole at each change, under mu; readers load it without a lock.
	ring atomic.Pointer[ring.Ring[*node.Node[T, ID]]]
}

const (
	// affinityWindow sets how even the shares are (the spread of a
	// resource's share falls like the inverse square root of the window)
	// against an acquisition's work (a rank for each point of the window).
	// A power of two: see rank.
	affinityWindow = 512
	// maxAffinityTries bounds the resources an affinity acquisition tries
	// before it settles for any available resource.
	maxAffinityTries = 16
)

// affinityRing returns the ring, building it on the first call. Callers
// that come while another builds it get an empty ring (and then take any
// resource) rather than wait.
func (s *Scheduler[T, ID]) affinityRing() *ring.Ring[*node.Node[T, ID]] {
	a := &s.affinity
	if r := a.ring.Load(); r != nil {
		return r
	}
	empty := ring.New(byKeyHash[T, ID])
	if !a.mu.TryLock() {
		return empty
	}
	defer a.mu.Unlock()
	if r := a.ring.Load(); r != nil {
		return r
	}
	// From here on, every change calls resourcesChanged, which waits for
	// mu; a change made before is seen by Range (see affinity).
	a.ring.Store(empty)
	var pts []ring.Point[*node.Node[T, ID]]
	s.nodes.Range(func(k ID, n *node.Node[T, ID]) {
		if !n.Leaving.Load() {
			pts = append(pts, point(n))
		}
	})
	r := empty.Change(nil, pts)
	a.ring.Store(r)
	return r
}

// resourcesChanged brings the ring up to date for keys after they were
// added or removed (see affinity). Call it with no shard lock held.
func (s *Scheduler[T, ID]) resourcesChanged(keys ...ID) {
	a := &s.affinity
	if a.ring.Load() == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.ring.Load()
	var gone, come []ring.Point[*node.Node[T, ID]]
	for _, k := range keys {
		var want *node.Node[T, ID]
		if n, ok := s.nodes.Get(k); ok && !n.Leaving.Load() {
			want = n
		}
		has := pointOf(r, k)
		if has == want {
			continue
		}
		if has != nil {
			gone = append(gone, point(has))
		}
		if want != nil {
			come = append(come, point(want))
		}
	}
	if gone != nil || come != nil {
		a.ring.Store(r.Change(gone, come))
	}
}

// batchChanged is resourcesChanged for the keys of a batch.
func (s *Scheduler[T, ID]) batchChanged(slab []node.Node[T, ID]) {
	if s.affinity.ring.Load() == nil {
		return
	}
	keys := make([]ID, len(slab))
	for i := range slab {
		keys[i] = slab[i].Key
	}
	s.resourcesChanged(keys...)
}

// point is n's point: at the top half of its key's hash, and ordered by
// the whole hash among points at the same position (byKeyHash).
func point[T any, ID comparable](n *node.Node[T, ID]) ring.Point[*node.Node[T, ID]] {
	return ring.Point[*node.Node[T, ID]]{Pos: uint32(keyHash(n.Key) >> 32), Val: n}
}

// byKeyHash orders points at the same position. Distinct keys whose
// hashes are equal in all 64 bits stay in the order they came in: the one
// case where the ring is not a function of the set of keys.
func byKeyHash[T any, ID comparable](a, b *node.Node[T, ID]) int {
	return cmp.Compare(keyHash(a.Key), keyHash(b.Key))
}

// pointOf returns the node whose point r holds for key k, or nil.
func pointOf[T any, ID comparable](r *ring.Ring[*node.Node[T, ID]], k ID) *node.Node[T, ID] {
	var found *node.Node[T, ID]
	at := uint32(keyHash(k) >> 32)
	r.Window(at, r.Len(), func(pos []uint32, val []*node.Node[T, ID]) bool {
		for i := range pos {
			if pos[i] != at {
				return false
			}
			if val[i].Key == k {
				found = val[i]
				return false
			}
		}
		return true
	})
	return found
}

// rank is how identifier hash h ranks the point at pos, the j-th of its
// window: a hash of both, whose low bits, replaced by affinityWindow-j,
// tell apart points at the same position (which hash alike) in their
// order on the ring. A rank is neither 0 nor ^uint64(0), the bounds that
// candidate and sweepAffinity start from.
func rank(h uint64, pos uint32, j int) uint64 {
	return hash.Mix64(h^uint64(pos))>>1&^(2*affinityWindow-1) | uint64(affinityWindow-j)
}

// sweepAffinity takes a hold on the resource the identifier maps to, or,
// while that one is unavailable, on the next available one in the
// identifier's order: the resources of its window by decreasing rank,
// into g, and reports whether it took one. It gives up after
// maxAffinityTries resources (the caller then takes any resource).
func (s *Scheduler[T, ID]) sweepAffinity(id acquire.AffinityIdentifier, lease bool, g *waiting.Grant[T, ID]) bool {
	h := acquire.HashIdentifier(id)
	r := s.affinityRing()
	below := ^uint64(0)
	for range maxAffinityTries {
		n, k := candidate(r, h, below)
		if n == nil {
			return false
		}
		if s.holdNode(n, lease, g) {
			s.acquired(n)
			return true
		}
		below = k
	}
	return false
}

// candidate returns the resource of the window of identifier hash h that
// h ranks highest below rank below, and its rank; nil if there is none.
func candidate[T any, ID comparable](r *ring.Ring[*node.Node[T, ID]], h, below uint64) (*node.Node[T, ID], uint64) {
	var best *node.Node[T, ID]
	top, j := uint64(0), 0
	r.Window(uint32(h>>32), affinityWindow, func(pos []uint32, val []*node.Node[T, ID]) bool {
		if i, k := highest(h, pos, j, top, below); i >= 0 {
			best, top = val[i], k
		}
		j += len(pos)
		return true
	})
	return best, top
}

// highest returns the index of the point of pos, a run of a window from
// its j-th point on, that h ranks highest between above and below
// (excluded), and its rank; -1 if there is none. It is not inlined: on
// its own, with few values live in its loop, it keeps them all in
// registers.
//
//go:noinline
func highest(h uint64, pos []uint32, j int, above, below uint64) (int, uint64) {
	best := -1
	for i, p := range pos {
		if k := rank(h, p, j+i); k < below && k > above {
			best, above = i, k
		}
	}
	return best, above
}

// holdNode takes a hold on n, into g, if it is still active and covers
// g.Cost, and reports whether it did.
func (s *Scheduler[T, ID]) holdNode(n *node.Node[T, ID], lease bool, g *waiting.Grant[T, ID]) bool {
	sh := &s.shards[n.Shard]
	sh.Lock()
	defer sh.Unlock()
	s.room.Repair(sh, nil)
	if n.State != node.Active {
		return false
	}
	if g.Cost != nil {
		if ok, _ := n.Budgets().Fits(g.Cost, s.now()); !ok {
			return false
		}
	}
	s.hold(sh, n, lease, g)
	return true
}

// keyHash hashes a resource key stably across runs: directly for strings
// and integers, through its printed form for other key types.
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
