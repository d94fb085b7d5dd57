package deadline

import (
	"math/rand"
	"sort"
	"testing"
)

func TestPopDueReturnsDueEntriesEarliestFirst(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var q Queue[int]
	var all []int64
	for i := 0; i < 500; i++ {
		at := rng.Int63n(1000)
		q.Push(at, i)
		all = append(all, at)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	var got []Entry[int]
	for now := int64(0); now < 1000; now += 97 {
		got = q.PopDue(now, got)
		for _, e := range got {
			if e.At > now {
				t.Fatalf("entry due at %d popped at %d", e.At, now)
			}
		}
		if q.Len() > 0 && q.Next() <= now {
			t.Fatalf("entry due at %d left in the queue at %d", q.Next(), now)
		}
	}
	got = q.PopDue(1000, got)
	if len(got) != len(all) {
		t.Fatalf("popped %d of %d", len(got), len(all))
	}
	for i, e := range got {
		if e.At != all[i] {
			t.Fatalf("entry %d due at %d, want %d", i, e.At, all[i])
		}
	}
}

func TestFilterKeepsTheRestInDeadlineOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	var q Queue[int]
	var kept []int64
	for i := 0; i < 500; i++ {
		at := rng.Int63n(1000)
		q.Push(at, i)
		if i%3 != 0 {
			kept = append(kept, at)
		}
	}
	q.Filter(func(e Entry[int]) bool { return e.Item%3 != 0 })
	sort.Slice(kept, func(i, j int) bool { return kept[i] < kept[j] })
	got := q.PopDue(1000, nil)
	if len(got) != len(kept) {
		t.Fatalf("%d entries left, want %d", len(got), len(kept))
	}
	for i, e := range got {
		if e.Item%3 == 0 || e.At != kept[i] {
			t.Fatalf("entry %d: item %d due at %d, want one kept, due at %d", i, e.Item, e.At, kept[i])
		}
	}
}
