package compare

// fenwick is a Fenwick (binary indexed) tree of counts over the values
// [0, n): the multiset of available priorities in the rank-error harness.
// Adding or removing a value and counting the values below one both cost
// O(log n), so measuring an acquisition does not disturb the timing of
// the next one by much, whatever the pool's size.
type fenwick struct {
	tree []int // tree[i-1] sums the counts of the values in (i - i&-i, i]
}

func newFenwick(n int) *fenwick { return &fenwick{tree: make([]int, n)} }

// add changes the count of value v by d.
func (f *fenwick) add(v, d int) {
	for i := v + 1; i <= len(f.tree); i += i & -i {
		f.tree[i-1] += d
	}
}

// below returns how many values are strictly smaller than v.
func (f *fenwick) below(v int) int {
	s := 0
	for i := v; i > 0; i -= i & -i {
		s += f.tree[i-1]
	}
	return s
}
