package budget

import (
	"testing"
	"time"

	"github.com/crsched/crs/config"
)

// The core's grant: refill, check and take, the clock moving by the time
// one unit takes to refill, so that the refill's division runs each time.
func BenchmarkTake(b *testing.B) {
	bk := NewBucket(config.Limit{Name: "tokens", Max: 40000, Per: time.Minute}, 0)
	now := int64(0)
	for i := 0; i < b.N; i++ {
		now += 1_500_000 // 1.5 ms: the refill of 1 unit at 40,000 per minute
		if !bk.Take(now, 1) {
			b.Fatal("refused a unit that had refilled")
		}
	}
}

// A refused grant asks how long to wait.
func BenchmarkWait(b *testing.B) {
	bk := NewBucket(config.Limit{Name: "tokens", Max: 40000, Per: time.Minute}, 0)
	bk.Take(0, 40000)
	for i := 0; i < b.N; i++ {
		if _, ok := bk.Wait(int64(i), 20000); !ok {
			b.Fatal("never")
		}
	}
}
