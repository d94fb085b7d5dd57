package acquire_test

import (
	"sync"
	"testing"

	"github.com/crsched/crs/acquire"
)

func TestLocalSelectsAShardInRange(t *testing.T) {
	l := acquire.NewLocalStrategy()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, n := range []int{0, 1, 2, 3, 8, 100} {
				view := make(shardCounts, n)
				for range 1000 {
					got := l.Select(view)
					if n <= 1 && got != 0 || n > 1 && (got < 0 || got >= n) {
						t.Errorf("%d shards: Select = %d", n, got)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

func TestLocalZeroValueIsReady(t *testing.T) {
	var l acquire.LocalStrategy
	if got := l.Select(make(shardCounts, 8)); got < 0 || got >= 8 {
		t.Fatalf("Select = %d, want a shard of 8", got)
	}
}

func TestLocalMostlyKeepsAGoroutineInOneShard(t *testing.T) {
	// One goroutine calling in a loop stays on one P, whose home the pool
	// keeps, so Select keeps answering the same shard. The pool may drop
	// a home (the race detector's build drops a quarter of them on
	// purpose) or the goroutine may move to another P, hence "mostly":
	// round robin, or any strategy that spreads calls, would stay on a
	// shard for an eighth of the calls.
	l := acquire.NewLocalStrategy()
	view := make(shardCounts, 8)
	const calls = 10_000
	same, last := 0, l.Select(view)
	for range calls {
		s := l.Select(view)
		if s == last {
			same++
		}
		last = s
	}
	if same < calls/2 {
		t.Fatalf("%d of %d calls answered the shard of the call before", same, calls)
	}
}
