package acquire_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/crsched/crs/acquire"
)

func TestRoundRobinVisitsEachShardExactlyKTimesInKRounds(t *testing.T) {
	const k = 5
	for _, n := range []int{1, 2, 3, 8, 32} {
		t.Run(fmt.Sprintf("%d shards", n), func(t *testing.T) {
			rr := acquire.NewRoundRobin()
			view := make(shardCounts, n)
			counts := make([]int, n)
			for call := range k * n {
				got := rr.Select(view)
				if got < 0 || got >= n {
					t.Fatalf("call %d: Select = %d, want in [0, %d)", call, got, n)
				}
				if want := call % n; got != want {
					t.Fatalf("call %d: Select = %d, want %d (strict rotation from 0)", call, got, want)
				}
				counts[got]++
			}
			for shard, c := range counts {
				if c != k {
					t.Errorf("shard %d visited %d times, want %d", shard, c, k)
				}
			}
		})
	}
}

func TestRoundRobinOfOneShardOrNoneLeavesTheRotation(t *testing.T) {
	rr := acquire.NewRoundRobin()
	var got []int
	for range 4 {
		got = append(got, rr.Select(make(shardCounts, 3)))
		// One shard or none: 0, without moving the rotation.
		if rr.Select(make(shardCounts, 1)) != 0 || rr.Select(shardCounts{}) != 0 {
			t.Fatal("Select of one shard or none is not 0")
		}
	}
	if want := []int{0, 1, 2, 0}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Select of three shards, between those of one and none, gave %v, want %v", got, want)
	}
}

func TestRoundRobinStaysExactUnderConcurrentCalls(t *testing.T) {
	const (
		shards     = 7
		goroutines = 16
		perG       = 1001 // goroutines*perG is a multiple of shards
	)
	rr := acquire.NewRoundRobin()
	view := make(shardCounts, shards)
	var (
		mu     sync.Mutex
		counts [shards]int
		bad    []int
		wg     sync.WaitGroup
	)
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local [shards]int
			for range perG {
				got := rr.Select(view)
				if got < 0 || got >= shards {
					mu.Lock()
					bad = append(bad, got)
					mu.Unlock()
					continue
				}
				local[got]++
			}
			mu.Lock()
			for i, c := range local {
				counts[i] += c
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("Select returned out-of-range shards: %v", bad)
	}
	total := 0
	for _, c := range counts {
		total += c
	}
	if total != goroutines*perG {
		t.Fatalf("counted %d selections, want %d", total, goroutines*perG)
	}
	// Every counter value is handed out exactly once, so even concurrent
	// callers split the calls exactly evenly.
	for shard, c := range counts {
		if want := goroutines * perG / shards; c != want {
			t.Errorf("shard %d selected %d times, want %d", shard, c, want)
		}
	}
}

// Stats reports a strategy by its String, and code written for CRS
// compares those names, so the built-in strategies spell them as CRS did.
func TestStrategiesNameThemselvesAsCRSDid(t *testing.T) {
	tests := []struct {
		strategy fmt.Stringer
		want     string
	}{
		{acquire.NewRoundRobin().(fmt.Stringer), "RoundRobin"},
		{acquire.NewWeightedStrategy([]uint{1}), "Weighted"},
		{acquire.NewAdaptiveStrategy(), "Adaptive"},
		{acquire.NewLocalStrategy(), "Local"},
	}
	for _, tt := range tests {
		if got := tt.strategy.String(); got != tt.want {
			t.Errorf("%T.String() = %q, want %q", tt.strategy, got, tt.want)
		}
	}
}

var (
	_ acquire.AcquireStrategy = (*acquire.RoundRobin)(nil)
	_ acquire.AcquireStrategy = (*acquire.WeightedStrategy)(nil)
	_ acquire.AcquireStrategy = (*acquire.AdaptiveStrategy)(nil)
)
