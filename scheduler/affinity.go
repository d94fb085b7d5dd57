package scheduler

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/internal/hash"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/ring"
)

// affinity maps identifiers to resources, so that AcquireByAffinity keeps
// returning the same resource to the same identifier. Each resource puts
// pointsPerResource points on a consistent-hash ring, at positions that
// depend on its key alone; an identifier's candidates are the window of
// affinityWindow points that follow its hash clockwise, and of those it
// prefers the point with the highest score (a hash of the identifier and
// the point: rendezvous hashing within the window). A resource's share is
// then the average of pointsPerResource*affinityWindow arcs of the ring,
// which is what makes shares even with few points, and a resource added
// or removed changes only the windows that hold its points.
//
// The ring is built on the first affinity acquisition, and from then on
// kept up to date by Add, BatchAdd and Remove, at O(log n) per point. It
// is a function of the set of keys: schedulers holding the same keys map
// identifiers alike, whatever the order they were added in.
//
// Invariant: once the ring is built, after every change of the lookup map
// or of a node's Leaving flag (but the deletion of a leaving node, which
// the ring no longer holds), the changing goroutine calls
// resourcesChanged with the key; that call, holding mu, sets the ring to
// hold exactly the points of the key's current node if it is in the map
// and not leaving, and no points for the key otherwise. Positions depend
// on the key only, so the ring holds points of at most one node per key.
type affinity[T any, ID comparable] struct {
	// mu serializes changes to the ring. It is taken with no shard lock
	// held, and under it only the lookup map's lock is taken.
	mu sync.Mutex
	// ring is nil until the first affinity acquisition, then replaced
	// whole at each change; readers load it without a lock.
	ring atomic.Pointer[ring.Ring[*node.Node[T, ID]]]
}

const (
	// pointsPerResource and affinityWindow set how even the shares are
	// (the spread of a resource's share falls like the inverse square
	// root of their product) against the ring's memory (points) and an
	// acquisition's work (the window).
	pointsPerResource = 8
	affinityWindow    = 32
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
	if !a.mu.TryLock() {
		return &ring.Ring[*node.Node[T, ID]]{}
	}
	defer a.mu.Unlock()
	if r := a.ring.Load(); r != nil {
		return r
	}
	// From here on, every change calls resourcesChanged, which waits for
	// mu; a change made before is seen by Range (see affinity).
	a.ring.Store(&ring.Ring[*node.Node[T, ID]]{})
	var pts []ring.Point[*node.Node[T, ID]]
	s.nodes.Range(func(k ID, n *node.Node[T, ID]) {
		if !n.Leaving.Load() {
			pts = appendPoints(pts, k, n)
		}
	})
	r := a.ring.Load().With(pts)
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
		kh := keyHash(k)
		has := r.Owner(pointPos(kh, 0), func(n *node.Node[T, ID]) bool { return n.Key == k })
		if has == want {
			continue
		}
		if has != nil {
			gone = appendPointsOf(gone, kh, has)
		}
		if want != nil {
			come = appendPointsOf(come, kh, want)
		}
	}
	if gone != nil || come != nil {
		a.ring.Store(r.Without(gone).With(come))
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

func appendPoints[T any, ID comparable](pts []ring.Point[*node.Node[T, ID]], k ID, n *node.Node[T, ID]) []ring.Point[*node.Node[T, ID]] {
	return appendPointsOf(pts, keyHash(k), n)
}

func appendPointsOf[T any, ID comparable](pts []ring.Point[*node.Node[T, ID]], kh uint64, n *node.Node[T, ID]) []ring.Point[*node.Node[T, ID]] {
	for j := range pointsPerResource {
		pts = append(pts, ring.Point[*node.Node[T, ID]]{Pos: pointPos(kh, j), Val: n})
	}
	return pts
}

// pointPos places point j of the resource whose key hashes to kh.
func pointPos(kh uint64, j int) uint64 {
	return hash.Mix64(kh ^ uint64(j+1)*0x9e3779b97f4a7c15)
}

// sweepAffinity takes a hold on the resource the identifier maps to, or,
// while that one is unavailable, on the next available one in the
// identifier's order: the resources of its window by decreasing score,
// into g, and reports whether it took one. It gives up after
// maxAffinityTries resources (the caller then takes any resource).
func (s *Scheduler[T, ID]) sweepAffinity(id acquire.AffinityIdentifier, lease bool, g *grant[T, ID]) bool {
	h := acquire.HashIdentifier(id)
	var buf [affinityWindow]ring.Point[*node.Node[T, ID]]
	window := s.affinityRing().Window(h, buf[:0])
	var scores [affinityWindow]uint64
	for i, p := range window {
		scores[i] = hash.Mix64(h ^ p.Pos)
	}
	for tries := 0; tries < maxAffinityTries; tries++ {
		best := -1
		for i, p := range window {
			if p.Val != nil && (best < 0 || scores[i] > scores[best]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		n := window[best].Val
		for i := range window { // a resource may own several points of the window
			if window[i].Val == n {
				window[i].Val = nil
			}
		}
		if s.holdNode(n, lease, g) {
			s.acquired(n)
			return true
		}
	}
	return false
}

// holdNode takes a hold on n, into g, if it is available, and reports
// whether it did.
func (s *Scheduler[T, ID]) holdNode(n *node.Node[T, ID], lease bool, g *grant[T, ID]) bool {
	sh := &s.shards[n.Shard]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s.repair(sh, nil)
	if n.State != node.Active {
		return false
	}
	if g.cost != nil {
		if ok, _ := fits(n, g.cost, s.now()); !ok {
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
