package loadtest

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// A tiny SVG plotter: just what the report's three charts need, so the
// HTML report needs no script and no library, and renders offline.

// frame is a chart's drawing area inside its SVG, in pixels.
type frame struct {
	w, h                     float64 // the whole SVG
	left, right, top, bottom float64 // margins
}

var chartFrame = frame{w: 760, h: 280, left: 70, right: 20, top: 30, bottom: 45}

func (f frame) x0() float64 { return f.left }
func (f frame) x1() float64 { return f.w - f.right }
func (f frame) y0() float64 { return f.h - f.bottom } // the x axis
func (f frame) y1() float64 { return f.top }

// scale maps data values to pixels, linearly or on a log10 scale.
type scale struct {
	lo, hi float64 // data range
	a, b   float64 // pixel range
	log    bool
}

func (s scale) at(v float64) float64 {
	lo, hi := s.lo, s.hi
	if s.log {
		v, lo, hi = math.Log10(math.Max(v, 1e-300)), math.Log10(lo), math.Log10(hi)
	}
	if hi == lo {
		return s.a
	}
	return s.a + (v-lo)/(hi-lo)*(s.b-s.a)
}

// niceTicks returns about n round values covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	if hi <= lo {
		return []float64{lo}
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ticks []float64
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		ticks = append(ticks, v)
	}
	return ticks
}

// svgDoc accumulates one chart.
type svgDoc struct {
	b strings.Builder
	f frame
}

func newSVG(id, title string, f frame) *svgDoc {
	d := &svgDoc{f: f}
	fmt.Fprintf(&d.b, `<svg id="%s" class="chart" viewBox="0 0 %g %g" role="img" aria-label="%s">`,
		esc(id), f.w, f.h, esc(title))
	d.text(f.x0(), 18, "title", "start", title)
	return d
}

func (d *svgDoc) line(x1, y1, x2, y2 float64, class string) {
	fmt.Fprintf(&d.b, `<line class="%s" x1="%s" y1="%s" x2="%s" y2="%s"/>`, class, num(x1), num(y1), num(x2), num(y2))
}

func (d *svgDoc) rect(x, y, w, h float64, class, tip string) {
	fmt.Fprintf(&d.b, `<rect class="%s" x="%s" y="%s" width="%s" height="%s">`, class, num(x), num(y), num(math.Max(w, 0)), num(math.Max(h, 0)))
	if tip != "" {
		fmt.Fprintf(&d.b, `<title>%s</title>`, esc(tip))
	}
	d.b.WriteString(`</rect>`)
}

func (d *svgDoc) text(x, y float64, class, anchor, s string) {
	fmt.Fprintf(&d.b, `<text class="%s" x="%s" y="%s" text-anchor="%s">%s</text>`, class, num(x), num(y), anchor, esc(s))
}

// polyline draws points given in pixels.
func (d *svgDoc) polyline(xs, ys []float64, class string) {
	var pts strings.Builder
	for i := range xs {
		fmt.Fprintf(&pts, "%s,%s ", num(xs[i]), num(ys[i]))
	}
	fmt.Fprintf(&d.b, `<polyline class="%s" points="%s"/>`, class, strings.TrimSpace(pts.String()))
}

// axes draws both axes with the given ticks and labels.
func (d *svgDoc) axes(xs, ys scale, xt, yt []float64, xfmt, yfmt func(float64) string, xLabel, yLabel string) {
	f := d.f
	for _, v := range yt {
		y := ys.at(v)
		d.line(f.x0(), y, f.x1(), y, "grid")
		d.text(f.x0()-6, y+4, "tick", "end", yfmt(v))
	}
	for _, v := range xt {
		x := xs.at(v)
		d.line(x, f.y0(), x, f.y0()+4, "axis")
		d.text(x, f.y0()+17, "tick", "middle", xfmt(v))
	}
	d.line(f.x0(), f.y0(), f.x1(), f.y0(), "axis")
	d.line(f.x0(), f.y0(), f.x0(), f.y1(), "axis")
	d.text((f.x0()+f.x1())/2, f.h-6, "label", "middle", xLabel)
	fmt.Fprintf(&d.b, `<text class="label" transform="translate(14 %s) rotate(-90)" text-anchor="middle">%s</text>`,
		num((f.y0()+f.y1())/2), esc(yLabel))
}

// legend draws coloured keys in the top right corner.
func (d *svgDoc) legend(names, classes []string) {
	x := d.f.x1()
	for i := len(names) - 1; i >= 0; i-- {
		x -= float64(len(names[i]))*6.5 + 26
		d.rect(x, 10, 12, 10, classes[i], "")
		d.text(x+16, 19, "tick", "start", names[i])
	}
}

func (d *svgDoc) String() string { return d.b.String() + "</svg>" }

func esc(s string) string { return html.EscapeString(s) }

func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
