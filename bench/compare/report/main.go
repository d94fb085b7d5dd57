// Command report turns the raw output of bench/scripts/compare.sh (go test
// benchmark lines from bench/compare and from the root module's acquire
// package) into the markdown tables of docs/BENCHMARKS.md: each operation's
// median time for the baselines and for crs at 1, 8 and 32 heaps, as
// ratios to the tight baseline of the same run; the targets, met or
// not, and the parallel ones round by round beside the host's cost of
// moving a cache line between cores; the floors of five targets, timed in
// the same run; the strategies' Select costs; and the rank error.
//
// Usage:
//
//	go run ./compare/report -raw out/compare-raw.txt
//
// Ratios are of medians taken in one run, never of figures from two runs:
// on a shared machine only what was measured side by side compares.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	raw := flag.String("raw", "", "file of `go test -bench` output (required)")
	flag.Parse()
	if *raw == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*raw, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(path string, out io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	res, err := parse(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(res.names) == 0 {
		return fmt.Errorf("%s: no benchmark results", path)
	}
	w := bufio.NewWriter(out)
	writeComparison(w, res)
	writeTargets(w, res)
	writeRounds(w, res)
	writeFloors(w, res)
	writeStrategies(w, res)
	writeRank(w, res)
	return w.Flush()
}
