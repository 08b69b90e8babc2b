package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
)

// The charts are SVG drawn here, into the page: no script, no library.
// Every mark a reader (or a test) may want to locate carries data-*
// attributes with its figures: data-at-sec is seconds since the run's
// first step.

// frame maps data to the pixels of one chart.
type frame struct {
	w, h       float64 // the whole SVG
	l, r, t, b float64 // margins
	xmax, ymax float64
}

func newFrame(h, xmax, ymax float64) frame {
	if xmax <= 0 {
		xmax = 1
	}
	if ymax <= 0 || math.IsNaN(ymax) {
		ymax = 1
	}
	return frame{w: 960, h: h, l: 64, r: 16, t: 10, b: 26, xmax: xmax, ymax: ymax}
}

func (f frame) px(x float64) float64 { return f.l + x/f.xmax*(f.w-f.l-f.r) }
func (f frame) py(y float64) float64 { return f.h - f.b - y/f.ymax*(f.h-f.t-f.b) }

// open starts the SVG with its axes: time along x, yfmt's labels up y
// (none when yfmt is nil).
func (f frame) open(sb *strings.Builder, id, label string, yfmt func(float64) string) {
	fmt.Fprintf(sb, `<svg id="%s" class="chart" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s" data-xmax-sec="%.3f">`,
		id, f.w, f.h, html.EscapeString(label), f.xmax)
	fmt.Fprintf(sb, `<rect class="plot" x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`, f.l, f.t, f.w-f.l-f.r, f.h-f.t-f.b)
	step := niceStep(f.xmax / 8)
	for x := 0.0; x <= f.xmax+1e-9; x += step {
		fmt.Fprintf(sb, `<line class="grid" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/><text class="tick" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`,
			f.px(x), f.px(x), f.t, f.h-f.b, f.px(x), f.h-8, clock(x))
	}
	if yfmt == nil {
		return
	}
	for i := 0; i <= 4; i++ {
		y := f.ymax * float64(i) / 4
		fmt.Fprintf(sb, `<line class="grid" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/><text class="tick" x="%.1f" y="%.1f" text-anchor="end">%s</text>`,
			f.l, f.w-f.r, f.py(y), f.py(y), f.l-6, f.py(y)+4, html.EscapeString(yfmt(y)))
	}
}

// niceStep rounds d up to 1, 2 or 5 times a power of ten.
func niceStep(d float64) float64 {
	if d <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(d)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= d {
			return m * p
		}
	}
	return 10 * p
}

// clock is seconds as m:ss (h:mm:ss past an hour).
func clock(sec float64) string {
	s := int(math.Round(sec))
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// series is one line of a line chart; a NaN y breaks it.
type series struct {
	name, class string
	x, y        []float64
}

// mark is a vertical line at a time, labelled.
type mark struct {
	atSec        float64
	label, class string
	attrs        string // more data-* attributes, already escaped
}

// lineChart draws ss over time with marks on top.
func lineChart(id, label string, xmax float64, ss []series, yfmt func(float64) string, marks []mark) template.HTML {
	ymax := 0.0
	for _, s := range ss {
		for _, y := range s.y {
			if !math.IsNaN(y) {
				ymax = max(ymax, y)
			}
		}
	}
	f := newFrame(200, xmax, ymax*1.1)
	var sb strings.Builder
	f.open(&sb, id, label, yfmt)
	for _, s := range ss {
		fmt.Fprintf(&sb, `<g class="series %s" data-series="%s">`, s.class, html.EscapeString(s.name))
		var pts []string
		flush := func() {
			if len(pts) > 0 {
				fmt.Fprintf(&sb, `<polyline points="%s"/>`, strings.Join(pts, " "))
			}
			pts = pts[:0]
		}
		for i := range s.x {
			if math.IsNaN(s.y[i]) {
				flush()
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", f.px(s.x[i]), f.py(s.y[i])))
		}
		flush()
		sb.WriteString(`</g>`)
	}
	drawMarks(&sb, f, marks)
	sb.WriteString(legend(ss))
	sb.WriteString(`</svg>`)
	return template.HTML(sb.String())
}

func drawMarks(sb *strings.Builder, f frame, marks []mark) {
	for _, m := range marks {
		x := f.px(m.atSec)
		fmt.Fprintf(sb, `<g class="mark %s" data-at-sec="%.3f"%s><line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/><text x="%.1f" y="%.1f">%s</text></g>`,
			m.class, m.atSec, m.attrs, x, x, f.t, f.h-f.b, x+4, f.t+12, html.EscapeString(m.label))
	}
}

// legend names the series in the chart's top right corner.
func legend(ss []series) string {
	if len(ss) < 2 {
		return ""
	}
	var sb strings.Builder
	x := 960.0 - 16 - 8
	for i := len(ss) - 1; i >= 0; i-- {
		w := 14 + 7*float64(len(ss[i].name))
		x -= w
		fmt.Fprintf(&sb, `<g class="legend %s"><rect x="%.1f" y="14" width="10" height="10"/><text x="%.1f" y="23">%s</text></g>`,
			ss[i].class, x, x+13, html.EscapeString(ss[i].name))
	}
	return sb.String()
}

// band is one stretch of a stacked chart: its stages' shares (0..1).
type band struct {
	from, to float64
	shares   []float64 // in the order of the stage names
}

// stackedChart draws each stretch's stage shares stacked to 100 %.
func stackedChart(id, label string, xmax float64, names []string, bands []band, marks []mark) template.HTML {
	f := newFrame(220, xmax, 1)
	var sb strings.Builder
	f.open(&sb, id, label, func(y float64) string { return fmt.Sprintf("%.0f %%", 100*y) })
	colour := stageClasses(names)
	for _, b := range bands {
		base := 0.0
		for k, s := range b.shares {
			if s <= 0 {
				continue
			}
			fmt.Fprintf(&sb, `<rect class="share %s" data-stage="%s" data-at-sec="%.3f" data-share="%.4f" x="%.2f" y="%.2f" width="%.2f" height="%.2f"/>`,
				colour[names[k]], html.EscapeString(names[k]), b.to, s, f.px(b.from), f.py(base+s), f.px(b.to)-f.px(b.from), f.py(base)-f.py(base+s))
			base += s
		}
	}
	drawMarks(&sb, f, marks)
	sb.WriteString(`</svg>`)
	return template.HTML(sb.String())
}

// paletteSize is the number of colours the style sheet defines for custom
// stages (.c0 ...).
const paletteSize = 8

// stageClasses is the colour class of each stage of names: a stage that
// stage.Known lists has its fixed colour (the flame bar's, st-NAME in
// stageCSS), a custom stage the palette's colour of its place among the
// custom stages of names. One call over every stage a page shows gives a
// stage one colour on the whole page.
func stageClasses(names []string) map[string]string {
	out := make(map[string]string, len(names))
	custom := 0
	for _, n := range names {
		if _, done := out[n]; done {
			continue
		}
		if stage.IsKnown(n) {
			out[n] = "st-" + n
			continue
		}
		out[n] = fmt.Sprintf("c%d", custom%paletteSize)
		custom++
	}
	return out
}

// stageCSS is the style sheet's rules of the known stages' fixed colours.
func stageCSS() template.CSS {
	var sb strings.Builder
	for _, k := range stage.Known {
		fmt.Fprintf(&sb, ".st-%s { fill: %s; background: %s; }\n", k.Name, k.Color, k.Color)
	}
	return template.CSS(sb.String())
}

// legendOf is the legend of the stages names, in their colours.
func legendOf(names []string) []legendItem {
	colour := stageClasses(names)
	var out []legendItem
	for _, n := range names {
		out = append(out, legendItem{colour[n], n})
	}
	return out
}

// heatMap draws rows (ranks) × buckets, hotter where a rank works longer;
// the straggler's row (or -1 for none) is outlined and labelled.
func heatMap(id, label string, xmax, bucket float64, rows []RankRow, straggler int) template.HTML {
	rowH := 22.0
	f := newFrame(float64(len(rows))*rowH+40, xmax, 1)
	f.l = 160
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range rows {
		for _, v := range r.WorkNs {
			if !math.IsNaN(v) {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	var sb strings.Builder
	f.open(&sb, id, label, nil)
	for i, r := range rows {
		y := f.t + float64(i)*rowH
		strag := r.Rank == straggler
		fmt.Fprintf(&sb, `<g class="rank-row%s" data-rank="%d" data-straggler="%t">`, map[bool]string{true: " straggler"}[strag], r.Rank, strag)
		name := fmt.Sprintf("rank %d", r.Rank)
		if strag {
			name += " ◀ straggler"
		}
		fmt.Fprintf(&sb, `<text class="row-label" x="%.1f" y="%.1f" text-anchor="end">%s</text>`, f.l-6, y+rowH/2+4, html.EscapeString(name))
		for k, v := range r.WorkNs {
			if math.IsNaN(v) {
				continue
			}
			heat := 0.0
			if hi > lo {
				heat = (v - lo) / (hi - lo)
			}
			from := float64(k) * bucket
			fmt.Fprintf(&sb, `<rect class="cell" data-at-sec="%.3f" data-work-ms="%.3f" x="%.2f" y="%.1f" width="%.2f" height="%.1f" fill="%s"><title>rank %d at %s: %.2f ms</title></rect>`,
				from+bucket, v/1e6, f.px(from), y+1, f.px(min(xmax, from+bucket))-f.px(from), rowH-2, heatColor(heat), r.Rank, clock(from+bucket), v/1e6)
		}
		if strag {
			fmt.Fprintf(&sb, `<rect class="outline" x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`, f.l, y, f.w-f.l-f.r, rowH)
		}
		sb.WriteString(`</g>`)
	}
	sb.WriteString(`</svg>`)
	return template.HTML(sb.String())
}

// heatColor runs from pale yellow (0) to dark red (1).
func heatColor(h float64) string {
	h = min(1, max(0, h))
	r := 255 - 100*h
	g := 240 - 200*h
	b := 170 - 150*h
	return fmt.Sprintf("rgb(%.0f,%.0f,%.0f)", r, g, b)
}

// period is a stretch under one verdict for the timeline.
type period struct {
	From, To                 float64
	Kind, Headline, Severity string
}

// FromClock and ToClock are the period's ends as m:ss.
func (p period) FromClock() string { return clock(p.From) }

// ToClock is the period's end as m:ss.
func (p period) ToClock() string { return clock(p.To) }

// timeline draws the verdicts the run went through as one band.
func timeline(id, label string, xmax float64, ps []period) template.HTML {
	f := newFrame(70, xmax, 1)
	var sb strings.Builder
	f.open(&sb, id, label, nil)
	for _, p := range ps {
		fmt.Fprintf(&sb, `<rect class="period sev-%s" data-kind="%s" data-from-sec="%.3f" data-to-sec="%.3f" x="%.2f" y="%.1f" width="%.2f" height="%.1f"><title>%s–%s %s</title></rect>`,
			p.Severity, html.EscapeString(p.Kind), p.From, p.To, f.px(p.From), f.t, max(0.5, f.px(p.To)-f.px(p.From)), f.h-f.t-f.b,
			clock(p.From), clock(p.To), html.EscapeString(p.Headline))
		if f.px(p.To)-f.px(p.From) > 70 {
			fmt.Fprintf(&sb, `<text class="period-label" x="%.1f" y="%.1f">%s</text>`, f.px(p.From)+4, f.t+20, html.EscapeString(p.Kind))
		}
	}
	sb.WriteString(`</svg>`)
	return template.HTML(sb.String())
}
