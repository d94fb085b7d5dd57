package loadtest

import (
	_ "embed"
	"html/template"
	"io"
)

// The HTML report is one file with its charts drawn as inline SVG and its
// style inline: no script, no font, no URL, so it opens offline, from an
// archived CI artifact as well as from the machine that ran it.

//go:embed report.html.tmpl
var reportTemplate string

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"dur":   func(n int64) string { return dur(n) },
	"group": func(n uint64) string { return group(n) },
	"igrp":  func(n int64) string { return group(n) },
	"fgrp":  func(f float64) string { return group(int64(f + 0.5)) },
	"pct":   pct,
	"ratio": ratioText,
	"title": titleOf,
}).Parse(reportTemplate))

// htmlView is what the template reads: the report and its charts.
type htmlView struct {
	*Report
	Throughput, Latency, Utilisation template.HTML
	Latencies                        []namedLatency
	Baseline                         *Report
	// ResourceRows are the resources the table and the chart show: all
	// of them, or the busiest and idlest of a long list, summed up by
	// ResourceSpread.
	ResourceRows   []ResourceUse
	ResourceSpread string
}

type namedLatency struct {
	Name string
	LatencySummary
}

// WriteHTML writes the self-contained HTML report.
func WriteHTML(w io.Writer, r *Report) error {
	rows := r.Resources
	busiest, idlest, spread := resourceSummary(r.Resources)
	if spread != "" {
		rows = append(append([]ResourceUse{}, busiest...), idlest...)
	}
	v := htmlView{
		ResourceRows:   rows,
		ResourceSpread: spread,
		Report:         r,
		// The charts are built from numbers by svg.go, which escapes
		// every string it writes, so they are safe to insert as HTML.
		Throughput:  template.HTML(throughputChart(r)),
		Latency:     template.HTML(latencyChart(r)),
		Utilisation: template.HTML(utilisationChart(r, rows)),
		Latencies: []namedLatency{
			{"acquire (the call)", r.Latency.Acquire},
			{"backend (simulated)", r.Latency.Backend},
			{"total", r.Latency.Total},
			{"wake-up lag", r.Latency.WakeLag},
		},
		Baseline: r.Baseline,
	}
	return htmlTemplate.Execute(w, v)
}
