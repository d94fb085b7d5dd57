package deadline

import (
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/crsched/crs/internal/fakeclock"
)

// harness is a Timer on a fake clock whose handle records what came due,
// and when.
type harness struct {
	clock *fakeclock.Clock
	epoch time.Time
	t     *Timer[int]
	got   []due[int]
	boom  func(Entry[int]) bool // panic on this entry, if set
}

func newHarness() *harness {
	h := &harness{clock: fakeclock.New()}
	h.epoch = h.clock.Now()
	h.t = New(h.clock, h.now, func(e Entry[int]) {
		if h.boom != nil && h.boom(e) {
			panic("boom")
		}
		h.got = append(h.got, due[int]{h.now(), e})
	})
	return h
}

func (h *harness) now() int64 { return int64(h.clock.Now().Sub(h.epoch)) }

func rest(n int) Entry[int] { return Entry[int]{Kind: RestEnd, Node: n} }

func TestEntriesComeDueEarliestFirstEachAtItsDeadline(t *testing.T) {
	h := newHarness()
	rng := rand.New(rand.NewSource(1))
	var all []int64
	for i := range 500 {
		at := 1 + rng.Int63n(1000)
		h.t.Schedule(at, rest(i))
		all = append(all, at)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	h.clock.Advance(1000)
	if len(h.got) != len(all) {
		t.Fatalf("%d entries came due, want %d", len(h.got), len(all))
	}
	for i, d := range h.got {
		if d.at != all[i] {
			t.Fatalf("entry %d came due at %d, want %d", i, d.at, all[i])
		}
	}
	if h.t.Len() != 0 {
		t.Fatalf("%d entries left", h.t.Len())
	}
}

func TestADroppedEntryNeverComesDueAndMarksAreCompacted(t *testing.T) {
	h := newHarness()
	for i := range 100 {
		h.t.Schedule(int64(10+i), rest(i))
	}
	for i := 0; i < 100; i += 2 {
		h.t.Drop(int64(10+i), rest(i))
	}
	if n := h.t.Len(); n != 100 {
		t.Fatalf("%d entries queued after half were dropped, want 100: no compaction yet", n)
	}
	h.t.Drop(97, rest(87)) // now the marks outnumber the others
	if n := h.t.Len(); n != 49 {
		t.Fatalf("%d entries queued, want the 49 live ones: the marks were not compacted", n)
	}
	if err := h.t.Check(func(func(int64, Entry[int])) {}); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(200)
	for _, d := range h.got {
		if d.entry.Node%2 == 0 || d.entry.Node == 87 {
			t.Fatalf("dropped entry %d came due", d.entry.Node)
		}
	}
	if len(h.got) != 49 {
		t.Fatalf("%d entries came due, want 49", len(h.got))
	}
}

func TestAnEntryOfKindsThatDifferIsNotDroppedByTheOther(t *testing.T) {
	h := newHarness()
	lease := Entry[int]{Kind: LeaseEnd, Node: 1, Token: 7}
	h.t.Schedule(10, lease)
	h.t.Schedule(10, rest(1))
	h.t.Drop(10, Entry[int]{Kind: LeaseEnd, Node: 1, Token: 8})
	h.t.Drop(10, rest(1))
	h.clock.Advance(10)
	if len(h.got) != 1 || h.got[0].entry != lease {
		t.Fatalf("came due: %+v, want only the lease with token 7", h.got)
	}
}

func TestAPanicInHandleIsCountedAndTheEntryComesDueAgain(t *testing.T) {
	h := newHarness()
	panicked := false
	h.boom = func(Entry[int]) bool {
		if panicked {
			return false
		}
		panicked = true
		return true
	}
	h.t.Schedule(5, rest(1))
	h.clock.Advance(5) // the panic must not reach Advance
	if h.t.Panics() != 1 || len(h.got) != 0 {
		t.Fatalf("Panics = %d, came due %+v; want 1 and nothing", h.t.Panics(), h.got)
	}
	h.clock.Advance(PanicRetry)
	if len(h.got) != 1 || h.got[0].at != 5+int64(PanicRetry) {
		t.Fatalf("came due %+v, want rest(1) at %d", h.got, 5+int64(PanicRetry))
	}
}

func TestNeverAndStoppedTimersQueueNothing(t *testing.T) {
	h := newHarness()
	h.t.Schedule(Never, rest(1))
	if h.t.Len() != 0 {
		t.Fatal("a deadline of Never was queued")
	}
	h.t.Schedule(10, rest(2))
	h.t.Stop()
	h.t.Schedule(10, rest(3))
	h.clock.Advance(100)
	if len(h.got) != 0 {
		t.Fatalf("came due after Stop: %+v", h.got)
	}
}

func TestCheckFindsALiveDeadlineWithoutAnEntry(t *testing.T) {
	h := newHarness()
	h.t.Schedule(10, rest(1))
	h.t.Schedule(20, rest(2)) // so that one mark does not outnumber the rest
	h.t.Drop(10, rest(1))
	err := h.t.Check(func(yield func(int64, Entry[int])) { yield(10, rest(1)) })
	if err == nil {
		t.Fatal("Check passed a live deadline whose only entry is dropped")
	}
	if h.t.Pending(rest(1)) != true {
		t.Fatal("Pending does not see the dropped entry still queued")
	}
}
