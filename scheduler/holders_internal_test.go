package scheduler

import (
	"errors"
	"math"
	"testing"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

// A node counts its holders in 32 bits, and its capacity is at most
// math.MaxInt32: the hold that takes the last slot of such a node makes it
// full, the next Acquire finds nothing, and the count neither wraps nor
// stops matching its shard's (the test starts the count near the top,
// as 2^31 Acquires would).
func TestTheLastOfMaxInt32SlotsIsTakenWithoutOverflow(t *testing.T) {
	s, err := New(config.Config[*int, int]{
		HeapCount:     1,
		Comparator:    func(a, b *int) int { return *a - *b },
		KeyFunc:       func(v *int) int { return *v },
		AcquirePolicy: config.Exclusive,
		Capacity:      func(*int) int { return math.MaxInt },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	v := 1
	if err := s.Add(&v); err != nil {
		t.Fatal(err)
	}
	n, sh := s.find(1)
	const start = math.MaxInt32 - 2
	sh.Lock()
	n.Holders, sh.Holders = start, start
	sh.Unlock()
	for i := range 2 {
		if _, err := s.Acquire(); err != nil {
			t.Fatalf("acquisition %d of the last two slots: %v", i, err)
		}
	}
	if got := s.StateOf(1); got != "held" {
		t.Fatalf("with every slot taken the resource is %s, want held", got)
	}
	if _, err := s.Acquire(); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("Acquire with every slot taken: %v, want ErrNoResourceAvailable", err)
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Holders != math.MaxInt32 {
		t.Fatalf("Stats.Holders = %d, want %d", st.Holders, math.MaxInt32)
	}
	if err := s.Release(1); err != nil {
		t.Fatal(err)
	}
	if got := s.StateOf(1); got != "active" {
		t.Fatalf("after a release the resource is %s, want active", got)
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}
