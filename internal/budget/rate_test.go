package budget

import (
	"math"
	"testing"

	"github.com/crsched/crs/config"
)

const second = int64(1e9)

// rate makes the budgets of a rate limit alone, full at 0.
func rate(t *testing.T, perSecond float64, burst int) Budgets {
	t.Helper()
	l, ok := Rate(perSecond, burst)
	if !ok {
		t.Fatalf("Rate(%v, %d) is no limit", perSecond, burst)
	}
	return New([]config.Limit{l}, 0, 0)
}

func TestARateHandsOutItsBurstThenOnePerInterval(t *testing.T) {
	bs := rate(t, 2, 2)
	for i := range 2 {
		if ok, _ := bs.Fits(nil, 0); !ok {
			t.Fatalf("hand-out %d of a burst of 2 does not fit", i+1)
		}
		bs.Take(config.Cost{"tokens": 5}, 0) // a rate takes 1 a hold, whatever the cost names
	}
	// The next token comes after 1/rate = 0.5 s, exactly.
	if got, want := bs.Rest(0), second/2; got != want {
		t.Fatalf("empty until %d, want %d", got, want)
	}
	// A quarter second later half a token has been earned.
	if got, want := bs.Rest(second/4), second/2; got != want {
		t.Fatalf("with half a token, empty until %d, want %d", got, want)
	}
	if bs.Rest(second/2) != 0 {
		t.Fatal("the token did not appear on time")
	}
	if bs[0].Bucket.Level(10*second) != 2 {
		t.Fatalf("refill must stop at the burst: level %d", bs[0].Bucket.Level(10*second))
	}
	if bs.Limits() != nil {
		t.Fatalf("a rate is among the limits a cost can exceed: %v", bs.Limits())
	}
}

func TestARateRoundsItsIntervalUp(t *testing.T) {
	// 3 a second: a token every 333333333.3 ns, kept as 1 per 333333334.
	bs := rate(t, 3, 1)
	bs.Take(nil, 0)
	if got := bs.Rest(0); got != 333333334 {
		t.Fatalf("empty until %d, want 333333334", got)
	}
	// A rate so small that its interval is past a Duration: the burst,
	// then never.
	bs = rate(t, 1e-300, 1)
	bs.Take(nil, 0)
	if got := bs.Rest(0); got != math.MaxInt64 {
		t.Fatalf("empty until %d, want never", got)
	}
	for _, r := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, ok := Rate(r, 1); ok {
			t.Errorf("Rate(%v) is a limit", r)
		}
	}
}

func TestARetunedRateKeepsEarnedTokensUpToTheNewBurst(t *testing.T) {
	bs := rate(t, 1, 5)
	bs.Take(nil, 0)
	bs.Take(nil, 0) // 3 left
	l, _ := Rate(10, 2)
	bs = bs.Retuned([]config.Limit{l}, second, 0)
	if got := bs[0].Bucket.Level(second); got != 2 {
		t.Fatalf("retuned to a smaller burst: level %d, want 2", got)
	}
	bs.Take(nil, second)
	bs.Take(nil, second)
	if got, want := bs.Rest(second), second+second/10; got != want {
		t.Fatalf("after the retune the next token is at %d, want %d (the new rate)", got, want)
	}
}
