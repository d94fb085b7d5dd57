package histogram

import (
	"testing"
	"time"
)

func TestBucketsHoldTheirInclusiveRange(t *testing.T) {
	if len(Bounds)+1 != len(Histogram{}.counts) {
		t.Fatalf("%d bounds need %d buckets", len(Bounds), len(Bounds)+1)
	}
	var h Histogram
	for _, d := range []time.Duration{0, time.Microsecond, time.Microsecond + 1, 3 * time.Millisecond, 10 * time.Second, time.Minute} {
		h.Record(d)
	}
	counts, sum := h.Snapshot()
	want := map[int]uint64{0: 2, 1: 1, len(Bounds) - 1: 1, len(Bounds): 1}
	want[indexOf(5*time.Millisecond)]++ // 3 ms falls under the 5 ms bound
	for i, c := range counts {
		if c != want[i] {
			t.Errorf("bucket %d (<= %v) = %d, want %d", i, boundOf(i), c, want[i])
		}
	}
	if wantSum := 2*time.Microsecond + 1 + 3*time.Millisecond + 10*time.Second + time.Minute; sum != wantSum {
		t.Errorf("sum = %v, want %v", sum, wantSum)
	}
}

func indexOf(bound time.Duration) int {
	for i, b := range Bounds {
		if b == bound {
			return i
		}
	}
	panic("no such bound")
}

func boundOf(i int) any {
	if i < len(Bounds) {
		return Bounds[i]
	}
	return "overflow"
}
