package scheduler_test

import (
	"testing"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
)

// Tests added to kill mutants the other tests let live (docs/TESTING.md).

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
