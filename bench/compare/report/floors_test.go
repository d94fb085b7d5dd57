package main

import (
	"strings"
	"testing"
)

const floorRaw = `
BenchmarkUpdate/impl=tight-2                          1000  100 ns/op  0 B/op  0 allocs/op
BenchmarkUpdate/impl=crs/heaps=8-2                    1000  140 ns/op  0 B/op  0 allocs/op
BenchmarkFloorUpdate/part=find-2                      1000   25 ns/op
BenchmarkFloorUpdate/part=find+lock+fix-2             1000  110 ns/op
BenchmarkAcquireShared/impl=tight-2                   1000   10 ns/op  0 B/op  0 allocs/op
BenchmarkAcquireShared/impl=crs/heaps=1-2             1000  2.5 ns/op  0 B/op  0 allocs/op
BenchmarkAcquireShared/impl=crs/heaps=8-2             1000    7 ns/op  0 B/op  0 allocs/op
BenchmarkFloor/AtomicAdd-2                            1000    4 ns/op  0 B/op  0 allocs/op
BenchmarkAdd/impl=tight-2                             1000  500 ns/op  0 B/op  1 allocs/op
`

func TestFloorAddsItsStepsAndComparesWithTheGoal(t *testing.T) {
	res, err := parse(strings.NewReader(floorRaw))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		f          floor
		ratio      string
		parts      string
		below, any bool
	}{
		// (4 + 2.5) / 10: a goal of 0.5x lies below it.
		{floors[0], "0.65x", "round robin's locked add 0.40x, then the read of the shard it names (crs at heaps=1, which adds nothing) 0.25x", true, true},
		// 110 / 100, with find shown beside and not added.
		{floors[3], "1.10x", "find the node, lock its heap, set the value and fix the order 1.10x (find alone 0.25x)", true, true},
		// No step of BatchAdd's floor ran.
		{floors[4], "", "", false, false},
	} {
		ratio, parts, below, ok := checkFloor(res, tt.f)
		if ok != tt.any || ratio != tt.ratio || parts != tt.parts || below != tt.below {
			t.Errorf("%s: %q, %q, below %v, ok %v; want %q, %q, %v, %v", tt.f.target.label, ratio, parts, below, ok, tt.ratio, tt.parts, tt.below, tt.any)
		}
	}
}

func TestFloorAboveTheGoalIsNotBelow(t *testing.T) {
	res, err := parse(strings.NewReader(strings.ReplaceAll(floorRaw, "110 ns/op", "90 ns/op")))
	if err != nil {
		t.Fatal(err)
	}
	if ratio, _, below, ok := checkFloor(res, floors[3]); !ok || below || ratio != "0.90x" {
		t.Errorf("Update floor 0.90x against a goal of 1.0x: %q, below %v, ok %v; want 0.90x, not below", ratio, below, ok)
	}
}

func TestWriteFloorsMarksMissingSteps(t *testing.T) {
	res, err := parse(strings.NewReader(floorRaw))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	writeFloors(&out, res)
	mustContain(t, out.String(),
		"| Update | <= 1.0x, no allocation beyond the caller's value | 1.40x, 0 allocs | 1.10x | yes | find the node, lock its heap, set the value and fix the order 1.10x (find alone 0.25x) |",
		"| BatchAdd of 1,000 | <= 0.7x | – | – | – | – |",
	)
}
