package main

import (
	"fmt"
	"io"
	"slices"
)

// writeStrategies writes the strategies' Select costs (from the root
// module's acquire package, 8 shards), sequential and under
// b.RunParallel, where ns/op is wall time over all Ps' calls, and the
// floors they are measured against.
func writeStrategies(w io.Writer, res results) {
	fmt.Fprintln(w, "### Strategy Select (acquire package, 8 shards)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "The floor is the one step a strategy cannot do without, timed alone in the same run: round robin's locked add on its counter, the others' `math/rand/v2` draw.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| strategy | sequential (ratio to floor) | parallel | allocs/op |")
	fmt.Fprintln(w, "| --- | --- | --- | --- |")
	for _, s := range append(slices.Clone(strategies), untargeted...) {
		seq, par, allocs := missing, missing, missing
		if ns, ok := res.median(s.seq, "ns/op"); ok {
			seq = duration(ns) + floorText(res, s, ns)
		}
		if s.par == "" {
			par = "n/a"
		} else if ns, ok := res.median(s.par, "ns/op"); ok {
			par = duration(ns)
		}
		if a, ok := res.median(s.seq, "allocs/op"); ok {
			allocs = count(a)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", s.label, seq, par, allocs)
	}
	for _, f := range []struct{ label, name string }{
		{"floor: one locked add (`atomic.Uint64.Add`)", floorAtomicAdd},
		{"floor: one `math/rand/v2.Uint64`", floorRand},
	} {
		ns, allocs := missing, missing
		if v, ok := res.median(f.name, "ns/op"); ok {
			ns = duration(v)
		}
		if a, ok := res.median(f.name, "allocs/op"); ok {
			allocs = count(a)
		}
		fmt.Fprintf(w, "| %s | %s | n/a | %s |\n", f.label, ns, allocs)
	}
	fmt.Fprintln(w)
}
