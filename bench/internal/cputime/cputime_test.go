package cputime_test

import (
	"testing"

	"github.com/crsched/crs/bench/internal/cputime"
)

// TestNowNeverGoesBack checks only what holds on any machine, however
// loaded: two readings do not decrease.
func TestNowNeverGoesBack(t *testing.T) {
	a, ok := cputime.Now()
	if !ok {
		t.Skip("no CPU time on this system")
	}
	x := 0
	for i := 0; i < 1_000_000; i++ {
		x += i
	}
	_ = x
	b, _ := cputime.Now()
	if b < a {
		t.Fatalf("CPU time went back: %v then %v", a, b)
	}
}
