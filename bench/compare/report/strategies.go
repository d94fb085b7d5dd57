package main

import (
	"fmt"
	"io"
)

// writeStrategies writes the strategies' Select costs (from the root
// module's acquire package, 8 shards), sequential and under
// b.RunParallel, where ns/op is wall time over all Ps' calls.
func writeStrategies(w io.Writer, res results) {
	fmt.Fprintln(w, "### Strategy Select (acquire package, 8 shards)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| strategy | sequential | parallel | allocs/op |")
	fmt.Fprintln(w, "| --- | --- | --- | --- |")
	for _, s := range strategies {
		seq, par, allocs := missing, missing, missing
		if ns, ok := res.median(s.seq, "ns/op"); ok {
			seq = duration(ns)
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
	fmt.Fprintln(w)
}
