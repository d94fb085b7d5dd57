package loadtest

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteComparison prints the two runs of -compare side by side.
func WriteComparison(w io.Writer, a, b *Report) error {
	if a.LLM != nil && b.LLM != nil {
		return writeLLMComparison(w, a.LLM, b.LLM)
	}
	fmt.Fprintf(w, "\nSide by side: the same workload on each pool\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  \t%s\t%s\t\n", a.Pool, b.Pool)
	row := func(name string, f func(*Report) string) {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t\n", name, f(a), f(b))
	}
	row("throughput (req/s)", func(r *Report) string { return group(int64(r.Throughput.PerSecond + 0.5)) })
	row("of theoretical limit", func(r *Report) string { return ratioText(r.Throughput) })
	row("successful", func(r *Report) string { return group(r.Requests.Success) })
	row("acquire timeouts", func(r *Report) string { return group(r.Requests.AcquireTimeouts) })
	row("acquire failures", func(r *Report) string { return group(r.Requests.AcquireFailures) })
	lat := func(name string, get func(*Report) int64) {
		row(name, func(r *Report) string { return dur(get(r)) })
	}
	lat("acquire mean", func(r *Report) int64 { return r.Latency.Acquire.Mean })
	lat("acquire p50", func(r *Report) int64 { return r.Latency.Acquire.P50 })
	lat("acquire p99", func(r *Report) int64 { return r.Latency.Acquire.P99 })
	lat("acquire p99.9", func(r *Report) int64 { return r.Latency.Acquire.P999 })
	lat("acquire max", func(r *Report) int64 { return r.Latency.Acquire.Max })
	lat("total p50", func(r *Report) int64 { return r.Latency.Total.P50 })
	lat("total p99", func(r *Report) int64 { return r.Latency.Total.P99 })
	lat("wake-up lag p99", func(r *Report) int64 { return r.Latency.WakeLag.P99 })
	row("CPU used", func(r *Report) string { return pct(r.Runtime.CPUShare) })
	row("GC cycles", func(r *Report) string { return group(r.Runtime.GCCycles) })
	row("accounting", func(r *Report) string {
		if r.Accounting.OK {
			return "OK"
		}
		return "FAILED"
	})
	return tw.Flush()
}
