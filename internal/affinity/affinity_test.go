package affinity

import (
	"fmt"
	"testing"

	"github.com/crsched/crs/internal/lookup"
	"github.com/crsched/crs/internal/node"
)

func nodes(t *testing.T, n int) *lookup.Map[string, string] {
	t.Helper()
	m := lookup.New[string, string]()
	for i := range n {
		k := fmt.Sprint("r", i)
		if _, ok := m.Insert(k, &node.Node[string, string]{Key: k, Value: k}); !ok {
			t.Fatalf("%s inserted twice", k)
		}
	}
	return m
}

// Affinity acquisitions never wait for a change of the ring: with the
// ring's mutex held, as by a Remove bringing the ring up to date or by
// the first call building it, Ring still returns at once (here it would
// deadlock otherwise): the ring as it was once built, and an empty one
// before, on which the caller takes any resource.
func TestTheRingIsReadWithoutWaitingForAChange(t *testing.T) {
	var built, unbuilt Map[string, string]
	built.Init(nodes(t, 1000))
	unbuilt.Init(nodes(t, 1))
	r := built.Ring()
	if r.Len() != 1000 {
		t.Fatalf("the built ring holds %d points, want 1000", r.Len())
	}
	built.mu.Lock()
	unbuilt.mu.Lock()
	defer built.mu.Unlock()
	defer unbuilt.mu.Unlock()
	if got := built.Ring(); got != r {
		t.Fatal("during a change, Ring returned another ring than the one built")
	}
	if got := unbuilt.Ring(); got.Len() != 0 || unbuilt.Built() != nil {
		t.Fatalf("while another builds it, Ring returned %d points and stored a ring", got.Len())
	}
	for i := range 50 {
		h := uint64(i) * 0x9e3779b97f4a7c15
		if n, _ := Candidate(r, h, ^uint64(0)); n == nil {
			t.Fatalf("identifier %d has no candidate on a ring of 1000", i)
		}
	}
}
