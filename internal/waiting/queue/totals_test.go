package queue

import (
	"testing"
	"time"
)

func TestWaitedCountsCancelledWaitsAndTheirTime(t *testing.T) {
	var q Queue[int]
	q.Waited(3*time.Millisecond, false)
	q.Waited(2*time.Millisecond, true)
	q.Waited(time.Millisecond, true)
	counts, waited, cancelled := q.Totals()
	total := uint64(0)
	for _, c := range counts {
		total += c
	}
	if total != 3 || waited != 6*time.Millisecond || cancelled != 2 {
		t.Fatalf("counts %v (total %d), waited %v, cancelled %d", counts, total, waited, cancelled)
	}
}
