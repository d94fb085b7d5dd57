package node

import (
	"math/rand"
	"testing"
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
