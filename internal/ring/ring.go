// Package ring keeps the points of a consistent-hash ring: 32-bit
// positions, each carrying a value, sorted, in chunks of at most
// maxChunk points. A Ring is never changed once built; Change returns a
// new Ring that shares every chunk it did not touch, so readers load a
// Ring through an atomic pointer and need no lock, and a change copies
// the chunks it touches and the chunk index, not every point.
//
// Positions and values are kept in separate arrays (a position beside a
// pointer would be padded to twice its size), each allocated for the
// points its chunk was built with: the ring costs little more than its
// points.
package ring

import (
	"cmp"
	"slices"
	"sort"
)

// maxChunk bounds a chunk, and so what a change copies besides the index;
// a chunk that a change leaves with fewer than maxChunk/4 points takes in
// its successor, so that chunks do not dwindle under removals.
const maxChunk = 512

// Point is a position on the ring and the value it belongs to.
type Point[V comparable] struct {
	Pos uint32
	Val V
}

// Ring is an immutable sequence of points in order: by position, and
// points at the same position by the tie function given to New. Where
// tie returns 0 only for equal values, the order depends on the set of
// points only, not on how it was built.
type Ring[V comparable] struct {
	tie    func(a, b V) int
	chunks []*chunk[V] // in order; none is empty
	last   []uint32    // last[i] is the largest position of chunks[i]
	n      int         // points in all chunks
}

// chunk holds consecutive points of the ring. Its arrays are never
// written after the chunk is built.
type chunk[V comparable] struct {
	pos []uint32
	val []V
}

// New returns an empty ring whose points at the same position are
// ordered by tie.
func New[V comparable](tie func(a, b V) int) *Ring[V] {
	return &Ring[V]{tie: tie}
}

// Len returns the number of points.
func (r *Ring[V]) Len() int { return r.n }

func (r *Ring[V]) compare(a, b Point[V]) int {
	if c := cmp.Compare(a.Pos, b.Pos); c != 0 {
		return c
	}
	return r.tie(a.Val, b.Val)
}

// Change returns a ring holding r's points except those of gone (same
// position and value), plus those of come. Points of gone that r does not
// hold are ignored; a point of come that r holds already is held twice.
// It sorts gone and come.
func (r *Ring[V]) Change(gone, come []Point[V]) *Ring[V] {
	slices.SortFunc(gone, r.compare)
	slices.SortFunc(come, r.compare)
	size := len(r.chunks) + len(come)/maxChunk + 1
	out := &Ring[V]{tie: r.tie, chunks: make([]*chunk[V], 0, size), last: make([]uint32, 0, size), n: r.n}
	// The chunks before the first of come and gone stay as they are.
	first := len(r.chunks)
	for _, pts := range [][]Point[V]{come, gone} {
		if len(pts) > 0 {
			first = max(0, min(first, len(r.chunks)-1, sort.Search(len(r.last), func(i int) bool { return r.last[i] >= pts[0].Pos })))
		}
	}
	out.keep(r, 0, first)
	// carry holds the points taken from the chunks seen so far, in
	// order, that are not in a new chunk yet: all of them come before
	// what is left of r's chunks and of come.
	var carry chunk[V]
	for i := first; i < len(r.chunks); i++ {
		if len(come) == 0 && len(gone) == 0 && len(carry.pos) == 0 {
			out.keep(r, i, len(r.chunks))
			break
		}
		// Points of come and gone up to c's last one belong to c; all
		// the rest to the last chunk.
		c := r.chunks[i]
		end := Point[V]{Pos: c.pos[len(c.pos)-1], Val: c.val[len(c.val)-1]}
		in := func(p Point[V]) bool { return i == len(r.chunks)-1 || r.compare(p, end) <= 0 }
		nc, ng := 0, 0
		for nc < len(come) && in(come[nc]) {
			nc++
		}
		for ng < len(gone) && in(gone[ng]) {
			ng++
		}
		if nc == 0 && ng == 0 && len(carry.pos) == 0 {
			out.keep(r, i, i+1)
			continue
		}
		carry = r.merge(carry, c, gone[:ng], come[:nc])
		out.n -= len(c.pos)
		gone, come = gone[ng:], come[nc:]
		if len(carry.pos) >= maxChunk/4 {
			out.pushAll(carry)
			carry = chunk[V]{}
		}
	}
	if len(r.chunks) == 0 {
		carry = r.merge(carry, &chunk[V]{}, nil, come)
	}
	out.pushAll(carry)
	return out
}

// keep appends r's chunks i to j, as they are.
func (r *Ring[V]) keep(from *Ring[V], i, j int) {
	r.chunks = append(r.chunks, from.chunks[i:j]...)
	r.last = append(r.last, from.last[i:j]...)
}

// merge returns carry followed by the points of c but those of gone,
// merged with come; gone and come are sorted and belong to c. It copies
// the runs of c between them whole.
func (r *Ring[V]) merge(carry chunk[V], c *chunk[V], gone, come []Point[V]) chunk[V] {
	size := len(carry.pos) + len(c.pos) + len(come)
	dst := chunk[V]{pos: make([]uint32, 0, size), val: make([]V, 0, size)}
	dst.pos, dst.val = append(dst.pos, carry.pos...), append(dst.val, carry.val...)
	rest := *c
	at := func(i int) Point[V] { return Point[V]{rest.pos[i], rest.val[i]} }
	keep := func(n int) { // moves the first n points of rest to dst
		dst.pos, dst.val = append(dst.pos, rest.pos[:n]...), append(dst.val, rest.val[:n]...)
		rest.pos, rest.val = rest.pos[n:], rest.val[n:]
	}
	before := func(p Point[V]) int { // rest's points before p
		return sort.Search(len(rest.pos), func(i int) bool { return r.compare(at(i), p) >= 0 })
	}
	for len(come) > 0 || len(gone) > 0 {
		if len(gone) == 0 || len(come) > 0 && r.compare(come[0], gone[0]) < 0 {
			keep(before(come[0]))
			dst.pos, dst.val = append(dst.pos, come[0].Pos), append(dst.val, come[0].Val)
			come = come[1:]
			continue
		}
		// gone[0] and the points of gone that tie with it may be any of
		// the points of rest that tie with them.
		n := 1
		for n < len(gone) && r.compare(gone[n], gone[0]) == 0 {
			n++
		}
		keep(before(gone[0]))
		for len(rest.pos) > 0 && r.compare(at(0), gone[0]) == 0 {
			if slices.Contains(gone[:n], at(0)) {
				rest.pos, rest.val = rest.pos[1:], rest.val[1:]
			} else {
				keep(1)
			}
		}
		gone = gone[n:]
	}
	keep(len(rest.pos))
	return dst
}

// pushAll appends the points of c as they are if they fit one chunk, and
// otherwise as chunks of even size, each a copy at its exact size (chunks
// sharing one array would keep it all alive while any of them is).
func (r *Ring[V]) pushAll(c chunk[V]) {
	if len(c.pos) <= maxChunk {
		if len(c.pos) > 0 {
			r.push(&c)
		}
		return
	}
	for k := (len(c.pos) + maxChunk - 1) / maxChunk; k > 0; k-- {
		m := len(c.pos) / k
		r.push(&chunk[V]{pos: slices.Clone(c.pos[:m]), val: slices.Clone(c.val[:m])})
		c.pos, c.val = c.pos[m:], c.val[m:]
	}
}

// push appends c, a new chunk.
func (r *Ring[V]) push(c *chunk[V]) {
	r.chunks = append(r.chunks, c)
	r.last = append(r.last, c.pos[len(c.pos)-1])
	r.n += len(c.pos)
}

// Window calls yield with the n points that follow pos clockwise (all
// points if there are fewer), in runs of consecutive points: the first
// point at or after pos, then the next ones, wrapping past the largest
// position to the smallest. It stops early if yield returns false.
func (r *Ring[V]) Window(pos uint32, n int, yield func(pos []uint32, val []V) bool) {
	if r.n == 0 {
		return
	}
	c, _ := slices.BinarySearch(r.last, pos)
	i := 0
	if c == len(r.chunks) { // past the largest position: wrap
		c = 0
	} else {
		i, _ = slices.BinarySearch(r.chunks[c].pos, pos)
	}
	for n = min(n, r.n); n > 0; c, i = (c+1)%len(r.chunks), 0 {
		ch := r.chunks[c]
		k := min(n, len(ch.pos)-i)
		if !yield(ch.pos[i:i+k], ch.val[i:i+k]) {
			return
		}
		n -= k
	}
}
