package ring

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func newInts() *Ring[int] { return New(cmp.Compare[int]) }

// points returns the n points that follow pos, as Window gives them.
func points(r *Ring[int], pos uint32, n int) []Point[int] {
	var out []Point[int]
	r.Window(pos, n, func(ps []uint32, vs []int) bool {
		for i := range ps {
			out = append(out, Point[int]{ps[i], vs[i]})
		}
		return true
	})
	return out
}

// check verifies the ring's own invariants.
func check(r *Ring[int]) error {
	n := 0
	var prev *Point[int]
	for i, c := range r.chunks {
		if len(c.pos) == 0 || len(c.pos) > maxChunk || len(c.pos) != len(c.val) {
			return fmt.Errorf("chunk %d holds %d positions and %d values", i, len(c.pos), len(c.val))
		}
		if r.last[i] != c.pos[len(c.pos)-1] {
			return fmt.Errorf("chunk %d ends at %d, its index says %d", i, c.pos[len(c.pos)-1], r.last[i])
		}
		for j := range c.pos {
			p := Point[int]{c.pos[j], c.val[j]}
			if prev != nil && r.compare(*prev, p) > 0 {
				return fmt.Errorf("chunk %d: %v after %v", i, p, *prev)
			}
			prev = &p
		}
		n += len(c.pos)
	}
	if len(r.last) != len(r.chunks) || n != r.n {
		return fmt.Errorf("%d chunks, %d index entries, %d points counted as %d", len(r.chunks), len(r.last), n, r.n)
	}
	return nil
}

// model is the ring as a sorted slice.
type model []Point[int]

func (m model) window(pos uint32, n int) []Point[int] {
	i, _ := slices.BinarySearchFunc(m, pos, func(p Point[int], pos uint32) int { return cmp.Compare(p.Pos, pos) })
	var out []Point[int]
	for k := 0; k < min(n, len(m)); k++ {
		out = append(out, m[(i+k)%len(m)])
	}
	return out
}

func sameWindow(t *testing.T, r *Ring[int], m model, pos uint32, n int) {
	t.Helper()
	if got, want := points(r, pos, n), m.window(pos, n); !slices.Equal(got, want) {
		t.Fatalf("window of %d at %#x: got %v, want %v", n, pos, got, want)
	}
}

// Random batches of additions and removals, at sizes that split chunks
// and merge small ones into the next, with many points at equal
// positions; every window must be the model's, and a ring already built
// must not change when a new one is made from it.
func TestRingMatchesSortedSliceThroughChanges(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ring := newInts()
	var m model
	next := 0
	for step := 0; step < 200; step++ {
		old, oldModel := ring, slices.Clone(m)
		var gone, come []Point[int]
		if r.IntN(2) == 0 {
			keep := m[:0:0]
			for _, p := range m {
				if r.IntN(3) == 0 {
					gone = append(gone, p)
				} else {
					keep = append(keep, p)
				}
			}
			gone = append(gone, Point[int]{r.Uint32(), -1}, Point[int]{0xabcd0001, -2}) // absent: ignored
			m = keep
		}
		if r.IntN(3) > 0 || len(m) == 0 {
			come = make([]Point[int], 1+r.IntN([]int{5, 300, 3000}[r.IntN(3)]))
			for i := range come {
				pos := r.Uint32()
				if r.IntN(4) == 0 { // many points at few positions
					pos = 0xabcd0000 | uint32(r.IntN(8))
				}
				come[i] = Point[int]{pos, next}
				next++
			}
			m = append(m, come...)
		}
		ring = ring.Change(slices.Clone(gone), slices.Clone(come))
		slices.SortFunc(m, ring.compare)
		if err := check(ring); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if ring.Len() != len(m) {
			t.Fatalf("step %d: Len %d, want %d", step, ring.Len(), len(m))
		}
		for k := 0; k < 20; k++ {
			sameWindow(t, ring, m, r.Uint32(), 1+r.IntN(600))
		}
		sameWindow(t, ring, m, 0xabcd0003, 40) // inside a run of equal positions
		if len(m) > 0 {
			sameWindow(t, ring, m, m[len(m)-1].Pos, 3) // wraps
			sameWindow(t, ring, m, m[len(m)-1].Pos+1, 3)
			sameWindow(t, ring, m, m[0].Pos, len(m)+5)
		}
		sameWindow(t, old, oldModel, r.Uint32(), 700)
	}
}

// The same points make the same ring whether they come at once, one by
// one in another order, or after others that were added and removed.
func TestRingOrderDependsOnThePointsOnly(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	pts := make([]Point[int], 5000)
	for i := range pts {
		pts[i] = Point[int]{uint32(r.IntN(3000)), i} // many ties
	}
	want := points(newInts().Change(nil, slices.Clone(pts)), 0, len(pts))
	one := newInts()
	for _, i := range r.Perm(len(pts)) {
		one = one.Change(nil, []Point[int]{pts[i]})
	}
	extra := []Point[int]{{7, -1}, {7, 1 << 20}, {2999, -3}}
	churned := newInts().Change(nil, slices.Clone(extra))
	churned = churned.Change(nil, slices.Clone(pts[:2500])).Change(slices.Clone(extra), slices.Clone(pts[2500:]))
	for name, got := range map[string]*Ring[int]{"one by one": one, "after churn": churned} {
		if err := check(got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.Equal(points(got, 0, len(pts)+1), want) {
			t.Errorf("%s: a different order than built at once", name)
		}
	}
}

// Removing most points leaves no chunk but the last with fewer than a
// quarter of maxChunk points.
func TestRingMergesChunksThatRemovalsShrink(t *testing.T) {
	pts := make([]Point[int], 100*maxChunk)
	for i := range pts {
		pts[i] = Point[int]{uint32(i * 40_000), i}
	}
	ring := newInts().Change(nil, slices.Clone(pts))
	var gone []Point[int]
	for i, p := range pts {
		if i%100 != 0 {
			gone = append(gone, p)
		}
	}
	ring = ring.Change(gone, nil)
	if err := check(ring); err != nil {
		t.Fatal(err)
	}
	for i, c := range ring.chunks[:len(ring.chunks)-1] {
		if len(c.pos) < maxChunk/4 {
			t.Fatalf("chunk %d of %d holds %d points", i, len(ring.chunks), len(c.pos))
		}
	}
}

func TestEmptyRingHasNoWindow(t *testing.T) {
	r := newInts()
	if got := points(r, 42, 8); len(got) != 0 || r.Len() != 0 {
		t.Fatalf("empty ring: window %v, Len %d", got, r.Len())
	}
	one := r.Change(nil, []Point[int]{{7, 1}})
	if got := one.Change([]Point[int]{{7, 1}}, nil); got.Len() != 0 || len(got.chunks) != 0 {
		t.Fatalf("ring after removing its only point: Len %d, %d chunks", got.Len(), len(got.chunks))
	}
}

// Window stops when yield says so.
func TestWindowStopsWhenYieldReturnsFalse(t *testing.T) {
	pts := make([]Point[int], 3*maxChunk)
	for i := range pts {
		pts[i] = Point[int]{uint32(i), i}
	}
	r := newInts().Change(nil, pts)
	calls := 0
	r.Window(0, r.Len(), func([]uint32, []int) bool { calls++; return false })
	if calls != 1 {
		t.Fatalf("yield called %d times after returning false", calls)
	}
}
