// Package ring keeps the points of a consistent-hash ring: 64-bit
// positions, each carrying a value, in a persistent radix tree. A Ring is
// never changed once built; With and Without return a new Ring that
// shares every subtree they did not touch, so readers load a Ring through
// an atomic pointer and need no lock, and a change of m points costs
// O(m log n), not O(n).
//
// Positions are expected to be hashes, spread evenly over the 64 bits:
// the tree splits on successive 4-bit digits of the position, and even
// spreading is what keeps it shallow (about log16(n/16) levels) without
// any rebalancing.
package ring

import (
	"cmp"
	"slices"
)

const (
	digitBits = 4
	fanout    = 1 << digitBits
	maxDepth  = 64 / digitBits // a leaf this deep holds equal positions only
	// A leaf splits above leafMax points and a subtree folds back into a
	// leaf at leafMax/2 or fewer, so that churn around the limit does not
	// split and fold at every change.
	leafMax = 64
)

// Point is a position on the ring and the value it belongs to.
type Point[V comparable] struct {
	Pos uint64
	Val V
}

// Ring is an immutable set of points; the zero value is an empty ring.
type Ring[V comparable] struct {
	root *node[V]
}

// node is a leaf (kids == nil) holding its points sorted by position, or
// an inner node whose kid d holds the points whose next digit is d. No
// node is empty: a subtree that loses its last point is dropped.
type node[V comparable] struct {
	kids  *[fanout]*node[V]
	pts   []Point[V] // leaf only; shared, never written after the leaf is built
	count int        // points in the subtree
}

// Len returns the number of points.
func (r *Ring[V]) Len() int {
	if r.root == nil {
		return 0
	}
	return r.root.count
}

func digit(pos uint64, depth int) int {
	return int(pos >> (64 - digitBits*(depth+1)) & (fanout - 1))
}

func byPos[V comparable](a, b Point[V]) int { return cmp.Compare(a.Pos, b.Pos) }

// With returns a ring holding r's points and pts. It sorts pts and keeps
// them: the caller must not change pts afterwards.
func (r *Ring[V]) With(pts []Point[V]) *Ring[V] {
	slices.SortStableFunc(pts, byPos)
	return &Ring[V]{with(r.root, pts, 0)}
}

// Without returns a ring holding r's points except those of pts (same
// position and value); points of pts that r does not hold are ignored.
// It sorts pts.
func (r *Ring[V]) Without(pts []Point[V]) *Ring[V] {
	slices.SortStableFunc(pts, byPos)
	return &Ring[V]{without(r.root, pts, 0)}
}

// with adds pts, sorted, to the subtree t at depth.
func with[V comparable](t *node[V], pts []Point[V], depth int) *node[V] {
	if len(pts) == 0 {
		return t
	}
	if t == nil {
		return build(pts, depth)
	}
	if t.kids == nil {
		merged := make([]Point[V], 0, len(t.pts)+len(pts))
		i, j := 0, 0
		for i < len(t.pts) && j < len(pts) {
			if pts[j].Pos < t.pts[i].Pos {
				merged = append(merged, pts[j])
				j++
			} else {
				merged = append(merged, t.pts[i])
				i++
			}
		}
		merged = append(append(merged, t.pts[i:]...), pts[j:]...)
		return build(merged, depth)
	}
	kids := *t.kids
	for rest := pts; len(rest) > 0; {
		run, d := nextRun(rest, depth)
		kids[d] = with(kids[d], run, depth+1)
		rest = rest[len(run):]
	}
	return &node[V]{kids: &kids, count: t.count + len(pts)}
}

// build makes a subtree at depth of pts, sorted; its leaves share pts.
func build[V comparable](pts []Point[V], depth int) *node[V] {
	if len(pts) <= leafMax || depth == maxDepth {
		return &node[V]{pts: pts[:len(pts):len(pts)], count: len(pts)}
	}
	var kids [fanout]*node[V]
	for rest := pts; len(rest) > 0; {
		run, d := nextRun(rest, depth)
		kids[d] = build(run, depth+1)
		rest = rest[len(run):]
	}
	return &node[V]{kids: &kids, count: len(pts)}
}

// without removes pts, sorted, from the subtree t at depth.
func without[V comparable](t *node[V], pts []Point[V], depth int) *node[V] {
	if t == nil || len(pts) == 0 {
		return t
	}
	if t.kids == nil {
		kept := make([]Point[V], 0, len(t.pts))
		for _, p := range t.pts {
			if !slices.Contains(pts, p) {
				kept = append(kept, p)
			}
		}
		if len(kept) == len(t.pts) {
			return t
		}
		if len(kept) == 0 {
			return nil
		}
		return &node[V]{pts: kept, count: len(kept)}
	}
	kids := *t.kids
	count := t.count
	for rest := pts; len(rest) > 0; {
		run, d := nextRun(rest, depth)
		rest = rest[len(run):]
		if kids[d] == nil {
			continue
		}
		before := kids[d].count
		if kids[d] = without(kids[d], run, depth+1); kids[d] != nil {
			count -= before - kids[d].count
		} else {
			count -= before
		}
	}
	switch {
	case count == t.count:
		return t
	case count == 0:
		return nil
	case count <= leafMax/2:
		pts := make([]Point[V], 0, count)
		for _, k := range kids {
			pts = appendAll(pts, k)
		}
		return &node[V]{pts: pts, count: count}
	}
	return &node[V]{kids: &kids, count: count}
}

// appendAll appends the points of subtree t, in order.
func appendAll[V comparable](dst []Point[V], t *node[V]) []Point[V] {
	if t == nil {
		return dst
	}
	if t.kids == nil {
		return append(dst, t.pts...)
	}
	for _, k := range t.kids {
		dst = appendAll(dst, k)
	}
	return dst
}

// nextRun returns the first run of pts, sorted, whose points share their
// digit at depth, and that digit.
func nextRun[V comparable](pts []Point[V], depth int) ([]Point[V], int) {
	d := digit(pts[0].Pos, depth)
	end := 1
	for end < len(pts) && digit(pts[end].Pos, depth) == d {
		end++
	}
	return pts[:end], d
}

// Window appends to dst, up to its capacity, the points that follow pos
// clockwise: the first at or after pos, then the next ones, wrapping past
// the largest position to the smallest, each point at most once.
func (r *Ring[V]) Window(pos uint64, dst []Point[V]) []Point[V] {
	n := min(cap(dst)-len(dst), r.Len())
	for n > 0 {
		leaf, i := seek(r.root, pos, 0)
		if leaf == nil { // past the largest position: wrap
			leaf, i = first(r.root), 0
		}
		for ; i < len(leaf) && n > 0; i++ {
			dst = append(dst, leaf[i])
			n--
		}
		last := leaf[len(leaf)-1].Pos
		if last == ^uint64(0) {
			pos = 0
		} else {
			pos = last + 1 // equal positions share a leaf: none is skipped
		}
	}
	return dst
}

// seek returns the leaf holding the first point at or after pos in
// subtree t, and that point's index; nil if there is none.
func seek[V comparable](t *node[V], pos uint64, depth int) ([]Point[V], int) {
	if t == nil {
		return nil, 0
	}
	if t.kids == nil {
		i, _ := slices.BinarySearchFunc(t.pts, pos, func(p Point[V], pos uint64) int { return cmp.Compare(p.Pos, pos) })
		if i == len(t.pts) {
			return nil, 0
		}
		return t.pts, i
	}
	d := digit(pos, depth)
	if leaf, i := seek(t.kids[d], pos, depth+1); leaf != nil {
		return leaf, i
	}
	for _, k := range t.kids[d+1:] {
		if k != nil {
			return first(k), 0
		}
	}
	return nil, 0
}

// first returns the leaf holding the smallest position of subtree t.
func first[V comparable](t *node[V]) []Point[V] {
	for t.kids != nil {
		for _, k := range t.kids {
			if k != nil {
				t = k
				break
			}
		}
	}
	return t.pts
}

// Owner returns the value of a point at exactly pos for which match
// holds, or the zero value.
func (r *Ring[V]) Owner(pos uint64, match func(V) bool) V {
	var zero V
	leaf, i := seek(r.root, pos, 0)
	for ; leaf != nil && i < len(leaf) && leaf[i].Pos == pos; i++ {
		if match(leaf[i].Val) {
			return leaf[i].Val
		}
	}
	return zero
}
