// Package affinity maps identifiers to resources, for AcquireByAffinity:
// the same identifier keeps getting the same resource while it is
// available, and the next in an order fixed by the identifier while it
// is not.
//
//	var m affinity.Map[T, ID]
//	m.Init(nodes)
//	r := m.Ring()
//	n, rank := affinity.Candidate(r, h, ^uint64(0)) // the identifier's first choice
//	n, rank = affinity.Candidate(r, h, rank)        // its next
//
// Every change of the lookup map calls Changed (or BatchChanged) with
// the keys it changed, with no shard lock held.
package affinity

import (
	"cmp"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/crsched/crs/internal/hash"
	"github.com/crsched/crs/internal/lookup"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/ring"
)

// Map maps identifiers to resources, so that AcquireByAffinity keeps
// returning the same resource to the same identifier. Each resource has
// one point on a consistent-hash ring, at its key's hash; an identifier's
// candidates are the Window points that follow its own hash
// clockwise, and of those it prefers the one it ranks highest (rank, a
// hash of the identifier and the point: rendezvous hashing within the
// window). A resource's share is then the average of the Window
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
// Changed with the key; that call, holding mu, sets the ring to
// hold the point of the key's current node if it is in the map and not
// leaving, and no point for the key otherwise.
type Map[T any, ID comparable] struct {
	nodes *lookup.Map[T, ID] // the resources, by key
	// mu serializes changes to the ring. It is taken with no shard lock
	// held, and under it only the lookup map's lock is taken.
	mu sync.Mutex
	// ring is nil until the first affinity acquisition, then replaced
	// whole at each change, under mu; readers load it without a lock.
	ring atomic.Pointer[ring.Ring[*node.Node[T, ID]]]
}

const (
	// Window sets how even the shares are (the spread of a
	// resource's share falls like the inverse square root of the window)
	// against an acquisition's work (a rank for each point of the window).
	// A power of two: see rank.
	Window = 512
	// MaxTries bounds the resources an affinity acquisition tries
	// before it settles for any available resource.
	MaxTries = 16
)

// Init sets the resources m maps to.
func (m *Map[T, ID]) Init(nodes *lookup.Map[T, ID]) { m.nodes = nodes }

// Built returns the ring, or nil before the first Ring.
func (m *Map[T, ID]) Built() *ring.Ring[*node.Node[T, ID]] { return m.ring.Load() }

// Ring returns the ring, building it on the first call. Callers
// that come while another builds it get an empty ring (and then take any
// resource) rather than wait.
func (m *Map[T, ID]) Ring() *ring.Ring[*node.Node[T, ID]] {
	a := m
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
	// From here on, every change calls Changed, which waits for
	// mu; a change made before is seen by Range (see Map).
	a.ring.Store(empty)
	var pts []ring.Point[*node.Node[T, ID]]
	m.nodes.Range(func(k ID, n *node.Node[T, ID]) {
		if !n.Leaving.Load() {
			pts = append(pts, point(n))
		}
	})
	r := empty.Change(nil, pts)
	a.ring.Store(r)
	return r
}

// Changed brings the ring up to date for keys after they were
// added or removed (see Map). Call it with no shard lock held.
func (m *Map[T, ID]) Changed(keys ...ID) {
	a := m
	if a.ring.Load() == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.ring.Load()
	var gone, come []ring.Point[*node.Node[T, ID]]
	for _, k := range keys {
		var want *node.Node[T, ID]
		if n, ok := m.nodes.Get(k); ok && !n.Leaving.Load() {
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

// BatchChanged is Changed for the keys of a batch.
func (m *Map[T, ID]) BatchChanged(slab []node.Node[T, ID]) {
	if m.ring.Load() == nil {
		return
	}
	keys := make([]ID, len(slab))
	for i := range slab {
		keys[i] = slab[i].Key
	}
	m.Changed(keys...)
}

// point is n's point: at the top half of its key's hash, and ordered by
// the whole hash among points at the same position (byKeyHash).
func point[T any, ID comparable](n *node.Node[T, ID]) ring.Point[*node.Node[T, ID]] {
	return ring.Point[*node.Node[T, ID]]{Pos: uint32(KeyHash(n.Key) >> 32), Val: n}
}

// byKeyHash orders points at the same position. Distinct keys whose
// hashes are equal in all 64 bits stay in the order they came in: the one
// case where the ring is not a function of the set of keys.
func byKeyHash[T any, ID comparable](a, b *node.Node[T, ID]) int {
	return cmp.Compare(KeyHash(a.Key), KeyHash(b.Key))
}

// pointOf returns the node whose point r holds for key k, or nil.
func pointOf[T any, ID comparable](r *ring.Ring[*node.Node[T, ID]], k ID) *node.Node[T, ID] {
	var found *node.Node[T, ID]
	at := uint32(KeyHash(k) >> 32)
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
// window: a hash of both, whose low bits, replaced by Window-j,
// tell apart points at the same position (which hash alike) in their
// order on the ring. A rank is neither 0 nor ^uint64(0), the bounds that
// Candidate and its callers start from.
func rank(h uint64, pos uint32, j int) uint64 {
	return hash.Mix64(h^uint64(pos))>>1&^(2*Window-1) | uint64(Window-j)
}

// Candidate returns the resource of the window of identifier hash h that
// h ranks highest below rank below, and its rank; nil if there is none.
func Candidate[T any, ID comparable](r *ring.Ring[*node.Node[T, ID]], h, below uint64) (*node.Node[T, ID], uint64) {
	var best *node.Node[T, ID]
	top, j := uint64(0), 0
	r.Window(uint32(h>>32), Window, func(pos []uint32, val []*node.Node[T, ID]) bool {
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

// KeyHash hashes a resource key stably across runs: directly for strings
// and integers, through its printed form for other key types.
func KeyHash[ID comparable](k ID) uint64 {
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
