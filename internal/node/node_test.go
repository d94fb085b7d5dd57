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

const second = int64(1e9)

func TestBucketHandsOutBurstThenOnePerInterval(t *testing.T) {
	var b Bucket
	if b.Limited() || b.Empty(0) != 0 {
		t.Fatal("the zero bucket limits")
	}
	b.Retune(RateLimit(2, 2, 0), 0) // an unlimited bucket starts full
	if !b.Limited() || b.Level(0) != 2 {
		t.Fatalf("Retune from unlimited: %+v", b)
	}
	if next := b.Spend(0); next != 0 {
		t.Fatalf("first of a burst of 2 left the bucket empty until %d", next)
	}
	// The next token comes after 1/Rate = 0.5 s, exactly.
	if next, want := b.Spend(0), second/2; next != want {
		t.Fatalf("second take: next token at %d, want %d", next, want)
	}
	// A quarter second later half a token has been earned: the next whole
	// one is due a quarter second after that.
	if got, want := b.Empty(second/4), second/2; got != want {
		t.Fatalf("with half a token, next token at %d, want %d", got, want)
	}
	if b.Empty(second/2-1) == 0 {
		t.Fatal("a token appeared early")
	}
	if b.Empty(second/2) != 0 {
		t.Fatal("the token did not appear on time")
	}
	if b.Empty(10*second) != 0 || b.Level(10*second) != 2 {
		t.Fatalf("refill must stop at the burst: %+v", b)
	}
}

func TestRateLimitRoundsItsIntervalUp(t *testing.T) {
	// 3 a second: a token every 333333333.3 ns, kept as 1 per 333333334.
	b := RateLimit(3, 1, 0)
	if next := b.Spend(0); next != 333333334 {
		t.Fatalf("next token at %d, want 333333334", next)
	}
	// A rate so small that its interval is past a Duration: the burst,
	// then never.
	c := RateLimit(1e-300, 1, 0)
	if next := c.Spend(0); next != Never {
		t.Fatalf("next token at %d, want Never", next)
	}
}

func TestRetuneKeepsEarnedTokensUpToTheNewBurst(t *testing.T) {
	b := Bucket{}
	b.Retune(RateLimit(1, 5, 0), 0)
	b.Spend(0)
	b.Spend(0) // 3 left
	b.Retune(RateLimit(10, 2, second), second)
	if b.Level(second) != 2 {
		t.Fatalf("Retune to a smaller burst: %+v", b)
	}
	b.Spend(second)
	b.Spend(second)
	if got, want := b.Empty(second), second+second/10; got != want {
		t.Fatalf("after Retune the next token is at %d, want %d (the new rate)", got, want)
	}
	b.Retune(Bucket{}, 2*second)
	if b.Limited() || b != (Bucket{}) {
		t.Fatalf("Retune to unlimited: %+v", b)
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
	n.SetBucket(Bucket{})
	n.SetHealth(0, 0)
	n.ResetFailures()
	if n.extra != nil || n.Limited() || n.Bucket() != (Bucket{}) || n.Leases() != nil {
		t.Fatal("an unlimited bucket or zero health made an Extra")
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
	limit := RateLimit(1, 2, 0)
	n.SetBucket(limit)
	if !n.Limited() || n.Bucket() != limit {
		t.Fatalf("bucket %+v, limited %v", n.Bucket(), n.Limited())
	}
	n.SetBucket(Bucket{}) // an Extra in use takes the unlimited bucket too
	if n.Limited() || n.Bucket() != (Bucket{}) {
		t.Fatal("the limit stayed after an unlimited bucket")
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
