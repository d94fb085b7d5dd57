package main

import (
	"fmt"
	"io"
	"strings"
)

// A floor is the cheapest that a target's operation can be, measured in
// the same run: the steps it cannot do without, each a benchmark that does
// that step and nothing else. The steps follow one another (each needs
// the one before it, as a shard's read needs the rotation's ticket), so
// their medians add up, less what little of them the processor overlaps;
// the sum, over the tight pool's median of the operation, is a ratio the
// target can be set beside. A target below its floor is out of reach of
// any change to what the floor leaves out.
type floor struct {
	target ratioTarget
	steps  []floorPart
	// beside are parts shown with their ratios but not added: a step
	// measured apart, or the same work done another way.
	beside []floorPart
}

type floorPart struct {
	label string
	name  string // a benchmark of bench/compare or of the acquire package
}

var floors = []floor{
	{targetOf(opShared), []floorPart{
		{"round robin's locked add", floorAtomicAdd},
		{"then the read of the shard it names (crs at heaps=1, which adds nothing)", opShared.crsAt(1)},
	}, nil},
	{targetOf(opSharedParallel), []floorPart{
		{"round robin's counter alone, in parallel (its Select)", "SelectParallel/RoundRobin"},
	}, nil},
	{targetOf(opSharedParallelAdaptive), []floorPart{
		{"the random draw, in parallel", "Floor/RandUint64Parallel"},
		{"then the read (crs-adaptive at heaps=1, which draws nothing), in parallel", opSharedParallelAdaptive.crsAt(1)},
	}, nil},
	{targetOf(opUpdate), []floorPart{
		{"find the node, lock its heap, set the value and fix the order", "FloorUpdate/part=find+lock+fix"},
	}, []floorPart{
		{"find alone", "FloorUpdate/part=find"},
	}},
	{targetOf(opBatchAdd), []floorPart{
		{"the nodes, the key index and 8 heaps of the batch", "FloorBatchAdd/part=all"},
	}, []floorPart{
		{"nodes alone", "FloorBatchAdd/part=nodes"},
		{"key index alone", "FloorBatchAdd/part=index"},
		{"heaps alone", "FloorBatchAdd/part=heaps"},
		{"a Go map doing the index's work (the tight pool's)", "FloorBatchAdd/part=gomap"},
	}},
}

// targetOf returns the target on op's ratio; every floor has one.
func targetOf(op operation) ratioTarget {
	for _, t := range ratioTargets {
		if t.op == op {
			return t
		}
	}
	panic("no target on " + op.label)
}

// checkFloor returns the floor's ratio to tight, its parts in words with
// their ratios, and whether the target's goal lies below the floor.
func checkFloor(res results, f floor) (ratio, parts string, below, ok bool) {
	base, okB := res.median(f.target.op.tight(), "ns/op")
	if !okB || base == 0 {
		return "", "", false, false
	}
	sum := 0.0
	var words []string
	for _, p := range f.steps {
		ns, okP := res.median(p.name, "ns/op")
		if !okP {
			return "", "", false, false
		}
		sum += ns
		words = append(words, fmt.Sprintf("%s %s", p.label, ratioText(ns/base)))
	}
	text := strings.Join(words, ", ")
	var aside []string
	for _, p := range f.beside {
		if ns, okP := res.median(p.name, "ns/op"); okP {
			aside = append(aside, fmt.Sprintf("%s %s", p.label, ratioText(ns/base)))
		}
	}
	if len(aside) > 0 {
		text += " (" + strings.Join(aside, "; ") + ")"
	}
	return ratioText(sum / base), text, sum/base > f.target.maxRatio, true
}

func writeFloors(w io.Writer, res results) {
	fmt.Fprintln(w, "### Floors")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "What an operation cannot do without, each step timed alone in the same run, as a ratio to tight's time for the whole operation. The steps follow one another, each needing the one before it, so the floor is their sum, less what little of them the processor overlaps. The Update and BatchAdd steps run on crs's own key index, nodes and heaps, with none of the scheduler's checks and bookkeeping; the parallel exclusive row has no floor here (see the rounds above).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | goal | measured | floor | goal below the floor | the floor's steps (ratio to tight each) |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- |")
	for _, f := range floors {
		measured, _ := checkRatio(res, f.target)
		ratio, parts, below, ok := checkFloor(res, f)
		if !ok {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", f.target.label, f.target.goal, measured, missing, missing, missing)
			continue
		}
		verdict := "no"
		if below {
			verdict = "yes"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", f.target.label, f.target.goal, measured, ratio, verdict, parts)
	}
	fmt.Fprintln(w)
}
