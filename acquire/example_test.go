package acquire_test

import (
	"fmt"

	"github.com/crsched/crs/acquire"
)

// shardCounts is a ShardView whose shard i holds shardCounts[i] acquirable
// resources.
type shardCounts []int

func (s shardCounts) ShardCount() int           { return len(s) }
func (s shardCounts) ActiveCount(shard int) int { return s[shard] }

func ExampleNewRoundRobin() {
	rr := acquire.NewRoundRobin()
	view := shardCounts{10, 10, 10}
	for range 7 {
		fmt.Print(rr.Select(view), " ")
	}
	fmt.Println()
	// Output: 0 1 2 0 1 2 0
}

func ExampleNewConsistentHashRing() {
	ring := acquire.NewConsistentHashRing(8)
	first := ring.GetShard(acquire.HashIdentifier(acquire.StringIdentifier("user-42")))
	again := ring.GetShard(acquire.HashIdentifier(acquire.StringIdentifier("user-42")))
	fmt.Println(first == again)
	// Output: true
}

func ExampleNewWeightedStrategy() {
	// Shard 1 is draining: weight 0 keeps all new acquisitions off it,
	// and shard 0 gets three times the traffic of shard 2.
	w := acquire.NewWeightedStrategy([]uint{3, 0, 1})
	view := shardCounts{10, 10, 10}
	picked := make([]bool, 3)
	for range 1000 {
		picked[w.Select(view)] = true
	}
	fmt.Println("shard 1 picked:", picked[1])
	// Output: shard 1 picked: false
}

func ExampleNewLocalStrategy() {
	// Each P (GOMAXPROCS of them) gets a home shard, so which shard this
	// goroutine is sent to depends on where it runs; it is sent there
	// again on its next call unless it moves.
	local := acquire.NewLocalStrategy()
	view := shardCounts{10, 10, 10, 10}
	shard := local.Select(view)
	fmt.Println(local, shard >= 0 && shard < 4)
	// Output: Local true
}
