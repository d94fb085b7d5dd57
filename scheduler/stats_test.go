package scheduler_test

import (
	"testing"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/fakeclock"
)

// TestStatsCountsEveryStateOnceInItsTotals puts one resource in each
// state at once (active, held, excluded, suspended, ejected, rate-limited)
// and checks every count and that the totals add each of them exactly
// once: a total that missed or subtracted a state would pass any test in
// which that state is empty.
func TestStatsCountsEveryStateOnceInItsTotals(t *testing.T) {
	cfg := baseConfig(1, config.Exclusive)
	cfg.Clock = fakeclock.New() // nothing ends by itself
	cfg.Ejection = config.Ejection{ConsecutiveFailures: 1, BaseTime: time.Hour}
	cfg.RateLimit = func(v *worker) (float64, int) {
		if v.ID == "limited" {
			return 1, 1 // one hand-out empties it until the next token
		}
		return 0, 0
	}
	s := newScheduler(t, cfg)
	addAll(t, s, w("limited", 0), w("failing", 1), w("held", 2), w("suspended", 3), w("excluded", 4), w("active", 5))
	if v, err := s.Acquire(); err != nil || v.ID != "limited" {
		t.Fatalf("Acquire = %v, %v", v, err)
	}
	if err := s.Release("limited"); err != nil {
		t.Fatal(err)
	}
	l, err := s.Lease(bg)
	if err != nil || l.Key() != "failing" {
		t.Fatalf("Lease = %v, %v", l.Key(), err)
	}
	if err := l.Fail(); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Acquire(); err != nil || v.ID != "held" {
		t.Fatalf("Acquire = %v, %v", v, err)
	}
	if err := s.Suspend("suspended", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.Exclude("excluded"); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	got := [...]int{st.ActiveResources, st.HeldResources, st.ExcludedResources, st.SuspendedResources, st.EjectedResources, st.RateLimitedResources}
	if got != [...]int{1, 1, 1, 1, 1, 1} {
		t.Fatalf("active, held, excluded, suspended, ejected, rate-limited = %v, want one of each", got)
	}
	if st.InactiveResources != 5 || st.TotalResources != 6 || s.Len() != 6 || st.Holders != 1 {
		t.Fatalf("inactive %d, total %d, Len %d, holders %d; want 5, 6, 6, 1", st.InactiveResources, st.TotalResources, s.Len(), st.Holders)
	}
	if st.Ejections != 1 || st.Failures != 1 || st.Suspensions != 1 {
		t.Fatalf("ejections %d, failures %d, suspensions %d; want 1 each", st.Ejections, st.Failures, st.Suspensions)
	}
	if err := s.Release("held"); err != nil {
		t.Fatal(err)
	}
}

// TestStatsCountsEmptyAndNonEmptyShards: with one resource in four
// shards, three are empty; the counts and the per-shard sizes must say so.
func TestStatsCountsEmptyAndNonEmptyShards(t *testing.T) {
	s := newScheduler(t, baseConfig(4, config.Shared))
	addAll(t, s, w("only", 1))
	st := s.Stats()
	nonEmpty := 0
	for _, n := range st.HeapSizes {
		if n > 0 {
			nonEmpty++
		}
	}
	if st.HeapCount != 4 || st.EmptyHeaps != 3 || st.NonEmptyHeaps != 1 || nonEmpty != 1 || len(st.HeapSizes) != 4 {
		t.Fatalf("heaps %d, empty %d, non-empty %d, sizes %v", st.HeapCount, st.EmptyHeaps, st.NonEmptyHeaps, st.HeapSizes)
	}
}
