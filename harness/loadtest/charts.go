package loadtest

import (
	"fmt"
	"math"
	"time"
)

// throughputChart plots completions per second over the run, against the
// workers' limit at each moment (workers running / mean latency), with the
// measured window shaded.
func throughputChart(r *Report) string {
	f := chartFrame
	d := newSVG("chart-throughput", "Throughput over time", f)
	tl := r.Timeline
	end := float64(r.ElapsedNs) / 1e9
	if n := len(tl); n > 0 {
		end = math.Max(end, tl[n-1].T)
	}
	perWorker := 0.0
	if m := r.Config.LatencyMeanNs; m > 0 {
		perWorker = 1e9 / float64(m)
	}
	top := r.Throughput.Limit.PerSecond
	for _, s := range tl {
		top = math.Max(top, s.Throughput)
		if r.Throughput.Limit.Bottleneck != "pool" {
			top = math.Max(top, float64(s.Workers)*perWorker)
		}
	}
	top = math.Max(top*1.1, 1)
	xs := scale{lo: 0, hi: math.Max(end, 1e-3), a: f.x0(), b: f.x1()}
	ys := scale{lo: 0, hi: top, a: f.y0(), b: f.y1()}

	w0, w1 := float64(r.Config.WarmupNs)/1e9, float64(r.Config.WarmupNs+r.Config.DurationNs)/1e9
	d.rect(xs.at(w0), f.y1(), xs.at(w1)-xs.at(w0), f.y0()-f.y1(), "window", "measured window")
	d.axes(xs, ys, niceTicks(0, xs.hi, 8), niceTicks(0, top, 5),
		func(v float64) string { return fmt.Sprintf("%gs", v) },
		func(v float64) string { return group(int64(v)) }, "seconds since start", "requests / s")

	var px, py, lx, ly []float64
	for i, s := range tl {
		if i == 0 {
			continue // the origin, before any interval
		}
		px, py = append(px, xs.at(s.T)), append(py, ys.at(s.Throughput))
		limit := float64(s.Workers) * perWorker
		if r.Throughput.Limit.Bottleneck == "pool" {
			limit = r.Throughput.Limit.PerSecond
		}
		lx, ly = append(lx, xs.at(s.T)), append(ly, ys.at(limit))
	}
	if r.Throughput.Limit.Bottleneck == "none" { // nothing bounds the rate: no line to draw
		d.polyline(px, py, "s-measured")
		d.legend([]string{"measured", "measured window"}, []string{"k-measured", "window"})
		return d.String()
	}
	d.polyline(lx, ly, "s-limit")
	d.polyline(px, py, "s-measured")
	d.legend([]string{"measured", "limit", "measured window"}, []string{"k-measured", "k-limit", "window"})
	return d.String()
}

// latencyChart plots the share of requests per latency bin, on a log
// scale, for the acquire call and the whole request: one chart shows how
// many orders of magnitude separate them.
func latencyChart(r *Report) string {
	f := chartFrame
	d := newSVG("chart-latency", "Latency distribution", f)
	series := []struct {
		name, class string
		bins        []Bin
	}{
		{"acquire call", "b-acquire", r.Histograms.Acquire},
		{"total request", "b-total", r.Histograms.Total},
	}
	lo, hi, top := math.Inf(1), 0.0, 0.0
	for _, s := range series {
		var n uint64
		for _, b := range s.bins {
			n += b.Count
		}
		for _, b := range s.bins {
			lo, hi = math.Min(lo, float64(b.Lo)), math.Max(hi, float64(b.Hi))
			top = math.Max(top, float64(b.Count)/float64(max(n, 1)))
		}
	}
	if hi == 0 {
		lo, hi, top = 1e3, 1e9, 1
	}
	lo = math.Pow(10, math.Floor(math.Log10(math.Max(lo, 1))))
	hi = math.Pow(10, math.Ceil(math.Log10(hi)))
	top *= 1.1
	xs := scale{lo: lo, hi: hi, a: f.x0(), b: f.x1(), log: true}
	ys := scale{lo: 0, hi: top, a: f.y0(), b: f.y1()}
	var xt []float64
	for v := lo; v <= hi*1.0001; v *= 10 {
		xt = append(xt, v)
	}
	d.axes(xs, ys, xt, niceTicks(0, top, 5),
		func(v float64) string { return dur(time.Duration(v)) },
		func(v float64) string { return fmt.Sprintf("%g%%", math.Round(v*1000)/10) },
		"latency (log scale)", "share of requests")
	for _, s := range series {
		var n uint64
		for _, b := range s.bins {
			n += b.Count
		}
		for _, b := range s.bins {
			if b.Count == 0 {
				continue
			}
			share := float64(b.Count) / float64(max(n, 1))
			x0, x1 := xs.at(float64(b.Lo)), xs.at(float64(b.Hi))
			tip := fmt.Sprintf("%s %s to %s: %s (%s)", s.name, dur(b.Lo), dur(b.Hi), group(b.Count), pct(share))
			d.rect(x0, ys.at(share), x1-x0, f.y0()-ys.at(share), s.class, tip)
		}
	}
	d.legend([]string{"acquire call", "total request"}, []string{"b-acquire", "b-total"})
	return d.String()
}

// utilisationChart draws one bar per resource of rows (all, or the
// busiest and idlest of a long list): its share of acquisitions, and
// under the Exclusive policy how busy it was.
func utilisationChart(r *Report, rows []ResourceUse) string {
	f := chartFrame
	title := "Per-resource utilisation (share of acquisitions)"
	if r.Config.Policy == "exclusive" {
		title = "Per-resource utilisation (time busy)"
	}
	d := newSVG("chart-utilisation", title, f)
	top := 0.0
	for _, u := range rows {
		top = math.Max(top, u.Utilisation)
	}
	top = math.Max(math.Min(1, top*1.25), 0.01)
	ys := scale{lo: 0, hi: top, a: f.y0(), b: f.y1()}
	n := float64(max(len(rows), 1))
	slot := (f.x1() - f.x0()) / n
	d.axes(scale{lo: 0, hi: 1, a: f.x0(), b: f.x1()}, ys, nil, niceTicks(0, top, 5),
		nil, func(v float64) string { return fmt.Sprintf("%g%%", math.Round(v*1000)/10) }, "resource", "utilisation")
	for i, u := range rows {
		x := f.x0() + slot*float64(i) + slot*0.15
		y := ys.at(u.Utilisation)
		tip := fmt.Sprintf("%s: %s acquisitions, %s", u.Name, group(u.Acquisitions), pct(u.Utilisation))
		d.rect(x, y, slot*0.7, f.y0()-y, "bar", tip)
		if len(rows) <= 32 {
			d.text(x+slot*0.35, f.y0()+17, "tick", "middle", u.Name)
			d.text(x+slot*0.35, y-5, "tick", "middle", pct(u.Utilisation))
		}
	}
	return d.String()
}
