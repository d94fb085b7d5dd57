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
