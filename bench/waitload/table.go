package waitload

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Baseline is the pool the others' CPU per request is compared with: the
// plain channel, the cheapest correct pool there is.
const Baseline = "channel"

// CPURatio is r's CPU per request over the baseline's in the same run, or
// 0 when either was not measured. Only ratios within one run mean
// anything: the machine is shared and its speed varies between runs.
func CPURatio(r Result, results []Result) float64 {
	for _, b := range results {
		if b.Pool == Baseline && b.CPUPerRequest > 0 && r.CPUMeasured {
			return float64(r.CPUPerRequest) / float64(b.CPUPerRequest)
		}
	}
	return 0
}

// WriteTable prints results as a Markdown table, one row per pool, in the
// order given.
func WriteTable(w io.Writer, results []Result) error {
	rows := [][]string{{
		"pool", "served", "throughput", "limit", "% of limit", "busy %",
		"CPU/request", "CPU ×" + Baseline, "allocs/req",
		"handoff p50", "handoff p99", "FIFO inv. steady", "FIFO inv. all", "drain", "goroutines left",
	}}
	for _, r := range results {
		ratio := "n/a"
		if x := CPURatio(r, results); x > 0 {
			ratio = fmt.Sprintf("%.2f", x)
		}
		cpu := "n/a"
		if r.CPUMeasured {
			cpu = short(r.CPUPerRequest)
		}
		name := r.Pool
		if r.Err != "" || r.Violations > 0 {
			name += " (FAILED)"
		}
		rows = append(rows, []string{
			name,
			fmt.Sprint(r.Served),
			fmt.Sprintf("%.0f/s", r.Throughput),
			fmt.Sprintf("%.0f/s", r.Limit),
			fmt.Sprintf("%.2f%%", 100*r.LimitShare),
			fmt.Sprintf("%.2f%%", 100*r.BusyShare),
			cpu,
			ratio,
			fmt.Sprintf("%.2f", r.AllocsPerRequest),
			short(r.HandoffP50),
			short(r.HandoffP99),
			fmt.Sprintf("%d/%d (max %d)", r.SteadyInversions, r.SteadyGrants, r.SteadyMaxDisplacement),
			fmt.Sprintf("%d (max %d)", r.Inversions, r.MaxDisplacement),
			short(r.Drain),
			fmt.Sprint(r.GoroutinesLeft),
		})
	}
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], len([]rune(cell)))
		}
	}
	var b strings.Builder
	line := func(row []string) {
		for i, cell := range row {
			b.WriteString("| ")
			b.WriteString(cell)
			b.WriteString(strings.Repeat(" ", widths[i]-len([]rune(cell))+1))
		}
		b.WriteString("|\n")
	}
	line(rows[0])
	for i, wd := range widths {
		if i == 0 {
			b.WriteString("| " + strings.Repeat("-", wd) + " ")
		} else {
			b.WriteString("| " + strings.Repeat("-", wd-1) + ": ")
		}
	}
	b.WriteString("|\n")
	for _, row := range rows[1:] {
		line(row)
	}
	for _, r := range results {
		if r.Err != "" || r.Violations > 0 {
			fmt.Fprintf(&b, "\n%s FAILED: error %q, %d double holds\n", r.Pool, r.Err, r.Violations)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// short prints a duration with three significant digits.
func short(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.3gs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.3gms", float64(d)/1e6)
	case d >= time.Microsecond:
		return fmt.Sprintf("%.3gµs", float64(d)/1e3)
	default:
		return fmt.Sprintf("%dns", d)
	}
}
