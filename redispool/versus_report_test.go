package redispool

// BenchmarkVersusLock's report: the markdown table of docs/BENCHMARKS.md
// and the metrics benchstat reads.

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// versusTable is the markdown table of issue 30 for rows.
func versusTable(rows []versusRow) string {
	var b strings.Builder
	b.WriteString("| workload | redispool | plain lock | ratio | floor (ratio to the lock) |\n| --- | --- | --- | --- | --- |\n")
	line := func(what, pool, lock, ratio, floor string) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", what, pool, lock, ratio, floor)
	}
	ratio := func(a, b float64) string { return fmt.Sprintf("%.2fx", a/b) }
	for _, r := range rows {
		p, l, f := r.pool, r.lock, r.floor
		if r.w.hold == 0 {
			lockRate := thousands(l.rate())
			if r.ping() > 0 {
				lockRate += fmt.Sprintf(" (PING loop: %s)", thousands(r.ping()))
			}
			line(r.w.label()+": acquire+release per second", thousands(p.rate()), lockRate, ratio(p.rate(), l.rate()),
				fmt.Sprintf("%s (%s)", thousands(f.rate()), ratio(f.rate(), l.rate())))
			cpu := func(m measure) string { return fmt.Sprintf("%s (%.0f %%)", micros(m.cpuPerOp()), 100*m.cpuShare()) }
			line("same: server CPU per acquire+release (server busy)", cpu(p), cpu(l),
				ratio(float64(p.cpuPerOp()), float64(l.cpuPerOp())),
				fmt.Sprintf("%s (%s)", cpu(f), ratio(float64(f.cpuPerOp()), float64(l.cpuPerOp()))))
			continue
		}
		line(r.w.label()+": busy share", fmt.Sprintf("%.2f", p.busy()), fmt.Sprintf("%.2f", l.busy()), ratio(p.busy(), l.busy()), "")
		waits := func(m measure) string {
			return fmt.Sprintf("%.2f / %.2f / %.2f / %.2f ms (p99 %.1fx mean)", m.wait(0.5), m.wait(0.9), m.wait(0.99), m.wait(-1), m.wait(0.99)/m.wait(-1))
		}
		line("same: wait p50 / p90 / p99 / mean", waits(p), waits(l), "", "")
		tries := func(m measure) string {
			return fmt.Sprintf("%.2f / %.2f", m.perAcquisition(m.Failed), m.perAcquisition(m.Cmds))
		}
		line("same: failed tries / client commands per acquire+release", tries(p), tries(l), "", "")
	}
	return b.String()
}

// thousands formats n rounded, with commas: 14,219.
func thousands(n float64) string {
	s := strconv.FormatInt(int64(n+0.5), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func micros(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'g', 3, 64) + " µs"
}

// reportVersus reports r's figures and ratios as benchmark metrics.
func reportVersus(b *testing.B, r versusRow) {
	b.ReportMetric(0, "ns/op")
	for _, s := range []struct {
		prefix string
		m      measure
	}{{"pool-", r.pool}, {"lock-", r.lock}, {"floor-", r.floor}} {
		m := s.m
		if r.w.hold == 0 {
			b.ReportMetric(m.rate(), s.prefix+"ops/s")
			b.ReportMetric(float64(m.cpuPerOp())/float64(time.Microsecond), s.prefix+"server-µs/op")
			continue
		}
		if s.prefix == "floor-" {
			continue // not run with holds
		}
		b.ReportMetric(m.busy(), s.prefix+"busy")
		b.ReportMetric(m.wait(0.5), s.prefix+"wait-p50-ms")
		b.ReportMetric(m.wait(0.99), s.prefix+"wait-p99-ms")
		b.ReportMetric(m.wait(-1), s.prefix+"wait-mean-ms")
		b.ReportMetric(m.perAcquisition(m.Failed), s.prefix+"failed/op")
		b.ReportMetric(m.perAcquisition(m.Cmds), s.prefix+"cmds/op")
	}
	if r.w.hold == 0 {
		b.ReportMetric(r.pool.rate()/r.lock.rate(), "rate-ratio")
		b.ReportMetric(float64(r.pool.cpuPerOp())/float64(r.lock.cpuPerOp()), "cpu-ratio")
		b.ReportMetric(r.floor.rate()/r.lock.rate(), "floor-rate-ratio")
	} else {
		b.ReportMetric(r.pool.busy()/r.lock.busy(), "busy-ratio")
	}
	if r.ping() > 0 {
		b.ReportMetric(r.ping(), "ping/s")
	}
}
