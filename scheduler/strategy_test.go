package scheduler_test

import (
	"fmt"
	"testing"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

type fixedStrategy int

func (f fixedStrategy) Select(acquire.ShardView) int { return int(f) }

func TestOutOfRangeStrategyResultIsAnError(t *testing.T) {
	for _, idx := range []int{-1, 4, 1000} {
		t.Run(fmt.Sprint(idx), func(t *testing.T) {
			cfg := baseConfig(4, config.Exclusive)
			cfg.AcquireStrategy = fixedStrategy(idx)
			s := newScheduler(t, cfg)
			addAll(t, s, numbered(8)...)
			_, err := s.Acquire()
			wantErr(t, "Acquire", err, crserrors.ErrInvalidAcquireStrategy)
			if st := s.Stats(); st.ActiveResources != 8 {
				t.Fatalf("failed Acquire took a resource: %+v", st)
			}
		})
	}
}

func TestStrategyChoosesTheShard(t *testing.T) {
	cfg := baseConfig(4, config.Shared)
	cfg.AcquireStrategy = fixedStrategy(2)
	s := newScheduler(t, cfg)
	addAll(t, s, numbered(8)...) // round-robin placement: shard 2 holds w2 and w6
	got, err := s.Acquire()
	if err != nil || got.ID != "w2" {
		t.Fatalf("Acquire = %v, %v; want w2, the best of shard 2", got, err)
	}
}

func TestRoundRobinVisitsEveryShard(t *testing.T) {
	s := newScheduler(t, baseConfig(4, config.Shared))
	addAll(t, s, numbered(4)...) // one per shard
	seen := map[string]int{}
	for i := 0; i < 40; i++ {
		got, err := s.Acquire()
		if err != nil {
			t.Fatal(err)
		}
		seen[got.ID]++
	}
	for _, id := range []string{"w0", "w1", "w2", "w3"} {
		if seen[id] != 10 {
			t.Fatalf("shares %v, want 10 each", seen)
		}
	}
}

func TestBuiltInStrategiesAcquireFromEveryConfiguration(t *testing.T) {
	strategies := map[string]acquire.AcquireStrategy{
		"RoundRobin": acquire.NewRoundRobin(),
		"Weighted":   acquire.NewWeightedStrategy([]uint{1, 2, 3, 4}),
		"Adaptive":   acquire.NewAdaptiveStrategy(),
		"Local":      acquire.NewLocalStrategy(),
	}
	for name, st := range strategies {
		t.Run(name, func(t *testing.T) {
			cfg := baseConfig(4, config.Exclusive)
			cfg.AcquireStrategy = st
			s := newScheduler(t, cfg)
			addAll(t, s, numbered(20)...)
			for i := 0; i < 20; i++ {
				if _, err := s.Acquire(); err != nil {
					t.Fatalf("Acquire #%d: %v", i, err)
				}
			}
			_, err := s.Acquire()
			wantErr(t, "Acquire of 21st", err, crserrors.ErrNoResourceAvailable)
			if s.Stats().AcquireStrategy != name {
				t.Fatalf("strategy name %q", s.Stats().AcquireStrategy)
			}
		})
	}
}

func TestAdaptiveAcquiresFromTheShardWithMoreActiveResources(t *testing.T) {
	// With two shards the adaptive strategy always samples both, so the
	// fuller shard always wins: the one that keeps three active resources
	// against the other's one, and every Acquire must take its best. With
	// one shard (which draws nothing), w0 is the best of all.
	for _, c := range []struct {
		heaps   int
		exclude []string
		want    string
	}{
		{1, []string{"w3", "w5"}, "w0"},
		{2, []string{"w3", "w5"}, "w0"}, // two shards: w0 w2 w4 | w1 w3 w5
		{2, []string{"w2", "w4"}, "w1"},
	} {
		t.Run(fmt.Sprint(c.heaps, c.exclude), func(t *testing.T) {
			cfg := baseConfig(c.heaps, config.Exclusive)
			cfg.AcquireStrategy = acquire.NewAdaptiveStrategy()
			s := newScheduler(t, cfg)
			addAll(t, s, numbered(6)...)
			for _, id := range c.exclude {
				if err := s.Exclude(id); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < 100; i++ {
				got, err := s.Acquire()
				if err != nil || got.ID != c.want {
					t.Fatalf("Acquire #%d = %v, %v; want %s", i, got, err, c.want)
				}
				if err := s.Release(got.ID); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestAffinityReturnsSameResourceForSameIdentifier(t *testing.T) {
	s := newScheduler(t, baseConfig(8, config.Shared))
	addAll(t, s, numbered(64)...)
	for u := 0; u < 100; u++ {
		id := acquire.StringIdentifier(fmt.Sprintf("user-%d", u))
		first, err := s.AcquireByAffinity(id)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			again, _ := s.AcquireByAffinity(id)
			if again != first {
				t.Fatalf("%s got %s then %s", id, first.ID, again.ID)
			}
		}
	}
}

func TestAffinitySpreadsOverShards(t *testing.T) {
	s := newScheduler(t, baseConfig(8, config.Shared))
	addAll(t, s, numbered(8)...) // one per shard
	seen := map[string]bool{}
	for u := 0; u < 200; u++ {
		got, err := s.AcquireByAffinity(acquire.StringIdentifier(fmt.Sprintf("user-%d", u)))
		if err != nil {
			t.Fatal(err)
		}
		seen[got.ID] = true
	}
	if len(seen) != 8 {
		t.Fatalf("200 users reached %d of 8 shards", len(seen))
	}
}

func TestAffinityFallsBackDeterministically(t *testing.T) {
	s := newScheduler(t, baseConfig(8, config.Exclusive))
	addAll(t, s, numbered(8)...)
	id := userID("sticky")
	home, err := s.AcquireByAffinity(id)
	if err != nil {
		t.Fatal(err)
	}
	// Home shard now empty: the fallback must be the same every time.
	fallback, err := s.AcquireByAffinity(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(fallback.ID); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		again, err := s.AcquireByAffinity(id)
		if err != nil || again.ID != fallback.ID {
			t.Fatalf("fallback was %s, then %v (%v)", fallback.ID, again, err)
		}
		if err := s.Release(again.ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Release(home.ID); err != nil {
		t.Fatal(err)
	}
	if back, _ := s.AcquireByAffinity(id); back.ID != home.ID {
		t.Fatalf("after release, %s instead of home %s", back.ID, home.ID)
	}
}

func TestAffinityRejectsNilIdentifier(t *testing.T) {
	s := newScheduler(t, baseConfig(2, config.Shared))
	addAll(t, s, w("a", 1))
	_, err := s.AcquireByAffinity(nil)
	wantErr(t, "AcquireByAffinity(nil)", err, crserrors.ErrNilAffinityIdentifier)
}

type namedStrategy struct{ fixedStrategy }

func (namedStrategy) String() string { return "Mine" }

// Stats names a custom strategy by its String, and one without a String
// "CustomStrategy", as CRS did.
func TestStatsNamesACustomStrategyAsCRSDid(t *testing.T) {
	for want, st := range map[string]acquire.AcquireStrategy{
		"CustomStrategy": fixedStrategy(0),
		"Mine":           namedStrategy{},
	} {
		cfg := baseConfig(1, config.Shared)
		cfg.AcquireStrategy = st
		if got := newScheduler(t, cfg).Stats().AcquireStrategy; got != want {
			t.Errorf("Stats().AcquireStrategy = %q, want %q", got, want)
		}
	}
}

// With GlobalOrder the strategy only breaks ties: among equally good
// tops, the one of the shard it picked wins.
func TestGlobalOrderBreaksTiesAtTheStrategysShard(t *testing.T) {
	for _, policy := range []config.AcquirePolicy{config.Shared, config.Exclusive} {
		for start, want := range []string{"a", "b", "c", "d"} {
			cfg := baseConfig(4, policy)
			cfg.Ordering = config.GlobalOrder
			cfg.AcquireStrategy = fixedStrategy(start)
			s := newScheduler(t, cfg)
			addAll(t, s, w("a", 1), w("b", 1), w("c", 1), w("d", 1)) // one per shard
			got, err := s.Acquire()
			if err != nil || got.ID != want {
				t.Fatalf("%s, strategy picks shard %d: Acquire = %v, %v; want %s", policy, start, got, err, want)
			}
		}
	}
}

// viewRecorder is a strategy that reports what the view shows it.
type viewRecorder struct{ counts []int }

func (r *viewRecorder) Select(v acquire.ShardView) int {
	r.counts = r.counts[:0]
	for i := -1; i <= v.ShardCount(); i++ {
		r.counts = append(r.counts, v.ActiveCount(i))
	}
	return 0
}

func TestShardViewCountsActiveResourcesAndZeroOutOfRange(t *testing.T) {
	rec := &viewRecorder{}
	cfg := baseConfig(3, config.Exclusive)
	cfg.AcquireStrategy = rec
	s := newScheduler(t, cfg)
	addAll(t, s, numbered(5)...) // shards 0, 1, 2, 0, 1: counts 2, 2, 1
	if _, err := s.Acquire(); err != nil {
		t.Fatal(err)
	}
	want := []int{0, 2, 2, 1, 0} // shards -1, 0, 1, 2, 3
	for i := range want {
		if rec.counts[i] != want[i] {
			t.Fatalf("ActiveCount(-1..3) = %v, want %v", rec.counts, want)
		}
	}
}

func TestLockedPeekReadsTheTopAndItsValue(t *testing.T) {
	s := newScheduler(t, baseConfig(2, config.Shared))
	if _, ok := s.LockedPeek(0); ok {
		t.Fatal("an empty shard has a top")
	}
	addAll(t, s, w("a", 5), w("b", 1), w("c", 2)) // shard 0: a and c
	if v, ok := s.LockedPeek(0); !ok || v.ID != "c" || v.Priority != 2 {
		t.Fatalf("LockedPeek(0) = %+v, %v; want c at 2", v, ok)
	}
}

// AcquireContext starts where the strategy says, like Acquire.
func TestAcquireContextFollowsTheStrategy(t *testing.T) {
	cfg := baseConfig(4, config.Exclusive)
	cfg.AcquireStrategy = fixedStrategy(2)
	s := newScheduler(t, cfg)
	addAll(t, s, numbered(8)...) // shard 2 holds w2 and w6
	got, err := s.AcquireContext(bg)
	if err != nil || got.ID != "w2" {
		t.Fatalf("AcquireContext = %v, %v; want w2, the best of shard 2", got, err)
	}
}
