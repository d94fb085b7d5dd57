package node

import (
	"math/rand"
	"testing"
	"unsafe"
)

// TestLeasesStayFindableAcrossTheIndexThreshold adds and drops leases at
// random, crossing the point where the node starts indexing them, and
// checks every lookup against a plain set.
func TestLeasesStayFindableAcrossTheIndexThreshold(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	n := New[int, int](0, 0, 0, 1)
	live := map[uint64]bool{}
	var next uint64
	for step := 0; step < 5000; step++ {
		if len(live) == 0 || rng.Intn(3) > 0 && len(live) < 40 {
			next++
			n.AddLease(Lease{Token: next})
			live[next] = true
		} else {
			i := rng.Intn(len(n.Leases()))
			delete(live, n.Leases()[i].Token)
			n.DropLease(i)
		}
		if !n.LeaseIndexConsistent() || len(n.Leases()) != len(live) {
			t.Fatalf("step %d: index out of step (%d leases, %d live)", step, len(n.Leases()), len(live))
		}
		probe := uint64(rng.Int63n(int64(next) + 2))
		if found := n.FindLease(probe) >= 0; found != live[probe] {
			t.Fatalf("step %d: FindLease(%d) found=%v, live=%v", step, probe, found, live[probe])
		}
	}
	if n.extra.leaseAt == nil {
		t.Fatal("the index was never built: the test missed the threshold")
	}
}

func TestLeasesAreFoundByTokenAndDroppedByPosition(t *testing.T) {
	n := New("v", "k", 0, 3)
	if n.FindLease(1) != -1 {
		t.Fatal("found a lease on a node without leases")
	}
	for tok := uint64(1); tok <= 3; tok++ {
		n.AddLease(Lease{Token: tok})
	}
	for i, tok := range []uint64{1, 2, 3} {
		if got := n.FindLease(tok); got != i {
			t.Fatalf("FindLease(%d) = %d, want %d", tok, got, i)
		}
	}
	n.DropLease(0) // the last lease takes its place
	if l := n.Leases(); len(l) != 2 || l[0].Token != 3 || l[1].Token != 2 || n.FindLease(1) != -1 {
		t.Fatalf("after dropping position 0: %+v", l)
	}
	n.DropLease(1)
	if l := n.Leases(); len(l) != 1 || l[0].Token != 3 {
		t.Fatalf("after dropping the last position: %+v", l)
	}
}

func TestAStagedValueReachesLockFreeReadersOnlyWhenPublished(t *testing.T) {
	n := New[any, string](nil, "k", 0, 1) // a nil interface is a value too
	if n.Value != nil || !n.Stale() {
		t.Fatal("a new node that is not word-shaped must wait, stale, for its first Publish")
	}
	n.Publish()
	if n.Load() != nil || n.Value != nil || n.Stale() {
		t.Fatal("nil value not kept")
	}
	n.Stage(42)
	if n.Load() != nil || n.Value != 42 || !n.Stale() {
		t.Fatalf("Stage(42): Value %v, Load %v, Stale %v; want 42, nil, true", n.Value, n.Load(), n.Stale())
	}
	n.Publish()
	if n.Load() != 42 || n.Value != 42 || n.Stale() {
		t.Fatalf("Publish: Value %v, Load %v, Stale %v; want 42, 42, false", n.Value, n.Load(), n.Stale())
	}
	if n.Index != -1 || n.Capacity != 1 || n.Key != "k" {
		t.Fatalf("New: %+v", n)
	}
}

func TestStateAndRestNames(t *testing.T) {
	for s, want := range map[State]string{Removed: "removed", Active: "active", Held: "held", Excluded: "excluded", Draining: "draining", Resting: "resting", State(len(stateNames)): "invalid", State(99): "invalid"} {
		if got := s.String(); got != want {
			t.Errorf("State(%d) = %q, want %q", s, got, want)
		}
	}
	for r, want := range map[Rest]string{NoRest: "none", Suspended: "suspended", Ejected: "ejected", RateLimited: "rate-limited", Rest(len(restNames)): "invalid", Rest(99): "invalid"} {
		if got := r.String(); got != want {
			t.Errorf("Rest(%d) = %q, want %q", r, got, want)
		}
	}
}

func TestWordShapedValuesArePublishedWithoutACopy(t *testing.T) {
	a, b := new(int), new(int)
	n := New(a, "k", 0, 1)
	if !n.word || n.Load() != a {
		t.Fatalf("New(pointer): word %v, Load %p, want %p", n.word, n.Load(), a)
	}
	if allocs := testing.AllocsPerRun(100, func() { n.Stage(b); n.Publish() }); allocs != 0 {
		t.Fatalf("publishing a pointer allocates %v times", allocs)
	}
	if n.Load() != b || n.Value != b {
		t.Fatal("a pointer not published")
	}
	m := New(map[string]int{"x": 1}, "k", 0, 1)
	if !m.word || m.Load()["x"] != 1 {
		t.Fatal("a map is one word and must be published as itself")
	}
	for _, shaped := range []bool{WordShaped[string](), WordShaped[[]int](), WordShaped[any](), WordShaped[struct{ p *int }]()} {
		if shaped {
			t.Fatal("only pointers, maps, channels and funcs are word-shaped")
		}
	}
}

func TestAValueThatIsNotWordShapedIsCopiedOnlyWhenPublished(t *testing.T) {
	var n Node[string, string]
	n.Init("v", WordShaped[string]())
	if n.published != nil || !n.Stale() {
		t.Fatalf("Init made a copy (%p) or left the node fresh (stale %v)", n.published, n.Stale())
	}
	n.Publish()
	first := n.published
	if n.Load() != "v" || first == nil {
		t.Fatalf("Publish: Load %q", n.Load())
	}
	n.Stage("w")
	n.Publish() // a new copy: the old one may still be read
	if n.Load() != "w" || *(*string)(first) != "v" {
		t.Fatalf("second Publish: Load %q, first copy %q", n.Load(), *(*string)(first))
	}
}

// A node of a two-word value and an integer key, or of a pointer value
// and a string key, fits in nine words:
// every resource has one, so a field added to it costs every scheduler.
func TestANodeOfASmallValueIsNineWords(t *testing.T) {
	if size := unsafe.Sizeof(Node[[2]int64, uint64]{}); size > 72 {
		t.Fatalf("Node[[2]int64, uint64] is %d bytes, want at most 72", size)
	}
	if size := unsafe.Sizeof(Node[*int, string]{}); size > 72 {
		t.Fatalf("Node[*int, string] is %d bytes, want at most 72", size)
	}
}

// A node makes its Extra only when something needs it: reads of an
// absent Extra see zeros, and writes of zeros make none.
func TestExtraIsMadeOnlyForWhatNeedsIt(t *testing.T) {
	n := New("v", "k", 0, 1)
	n.SetHealth(0, 0)
	n.ResetFailures()
	n.SetBudgets(nil)
	n.SetFullAt(0)
	if n.extra != nil || n.Budgeted() || n.Budgets() != nil || n.Leases() != nil {
		t.Fatal("zero health, no budgets or a zero FullAt made an Extra")
	}
	if f, e := n.Health(); f != 0 || e != 0 {
		t.Fatalf("health without an Extra = %d, %d", f, e)
	}
	n.SetHealth(2, 1)
	if f, e := n.Health(); f != 2 || e != 1 || n.extra == nil {
		t.Fatalf("health = %d, %d; want 2, 1", f, e)
	}
	n.ResetFailures()
	if f, e := n.Health(); f != 0 || e != 1 {
		t.Fatalf("after ResetFailures health = %d, %d; want 0, 1", f, e)
	}
}

func TestIssueNeverRepeatsAToken(t *testing.T) {
	n := New("v", "k", 0, 1)
	if a, b := n.Issue(), n.Issue(); a == 0 || b != a+1 {
		t.Fatalf("tokens %d then %d", a, b)
	}
	n.AddLease(Lease{Token: 7, Deadline: 1})
	n.Lease(0).Deadline = 5
	if n.Leases()[0].Deadline != 5 {
		t.Fatal("Lease(i) does not refer to the stored lease")
	}
}
