package main

import (
	"fmt"
	"io"
	"strings"
)

// writeRank writes BenchmarkRankError's figures, medians over the runs:
// one row per configuration, in the order they ran.
func writeRank(w io.Writer, res results) {
	var names []string
	for _, name := range res.names {
		if strings.HasPrefix(name, "RankError/") {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return
	}
	fmt.Fprintln(w, "### Rank error of exclusive Acquire")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "10,000 resources with random priorities; rank = available resources strictly better than the one handed out. With 2 goroutines the rank is counted after the Acquire returns, and may be off by up to the window (the other goroutine's changes in between); heaps=1 is the control (method in bench/compare/rank.go).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| configuration | mean | p99 | max | window (mean) |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- |")
	for _, name := range names {
		cells := []string{strings.TrimPrefix(name, "RankError/")}
		for _, unit := range []string{"rank-mean", "rank-p99", "rank-max", "window-mean"} {
			cell := missing
			if v, ok := res.median(name, unit); ok {
				cell = figure(v)
			}
			cells = append(cells, cell)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	fmt.Fprintln(w)
}
