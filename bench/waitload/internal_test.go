package waitload

import (
	"testing"
)

// TestFIFOCountsInversions checks the inversion counter on a known order:
// tickets granted 1, 3, 2, 5, 4, 6 hold two inversions (2 after 3, 4
// after 5), each displaced by one.
func TestFIFOCountsInversions(t *testing.T) {
	var f fifo
	for _, ticket := range []uint64{1, 3, 2, 5, 4, 6} {
		f.granted(ticket)
	}
	if got := f.inversions.Load(); got != 2 {
		t.Errorf("inversions = %d, want 2", got)
	}
	if got := f.maxDisp.Load(); got != 1 {
		t.Errorf("max displacement = %d, want 1", got)
	}
}

func TestPercentileIsNearestRank(t *testing.T) {
	sorted := []int64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}
	for _, c := range []struct {
		q    float64
		want int64
	}{{0.5, 50}, {0.99, 100}, {0.1, 10}, {0, 10}, {1, 100}} {
		if got := percentile(sorted, c.q); got != c.want {
			t.Errorf("percentile(%v) = %d, want %d", c.q, got, c.want)
		}
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile of nothing = %d, want 0", got)
	}
}

// TestRecordClipsToWindow checks the window bookkeeping: a grant returned
// before the window does not count, one inside counts whole, one that
// runs past the end counts up to the end, and a hand-off is recorded only
// when the request was waiting when the release began.
func TestRecordClipsToWindow(t *testing.T) {
	var s slot
	w := window{start: 100, stop: 200}
	s.record(grant{began: 50, got: 90, released: 150, previous: 60}, w)    // before: ignored
	s.record(grant{began: 95, got: 110, released: 140, previous: 105}, w)  // waited: hand-off 5
	s.record(grant{began: 150, got: 160, released: 250, previous: 140}, w) // not waiting at 140
	if s.served != 2 {
		t.Errorf("served = %d, want 2", s.served)
	}
	if want := int64(30 + 40); s.busy != want {
		t.Errorf("busy = %d, want %d", s.busy, want)
	}
	if want := int64(30 + 90); s.holdSum != want {
		t.Errorf("holdSum = %d, want %d", s.holdSum, want)
	}
	if len(s.handoffs) != 1 || s.handoffs[0] != 5 {
		t.Errorf("handoffs = %v, want [5]", s.handoffs)
	}
}
