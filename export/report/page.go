package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"time"

	"github.com/pipetop/pipetop/metrics/units"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/summary"
)

//go:embed report.html.tmpl
var pageText string

//go:embed common.html.tmpl
var commonText string

var page = parsePage("report", pageText)

// parsePage parses a page's template over the parts the pages share.
func parsePage(name, text string) *template.Template {
	funcs := template.FuncMap{"ms": func(ns float64) float64 { return ns / 1e6 }, "stageCSS": stageCSS}
	t := template.Must(template.New(name).Funcs(funcs).Parse(commonText))
	return template.Must(t.Parse(text))
}

// view is what the template fills in.
type view struct {
	R          Report
	Title      string
	Started    string
	Verdict    verdict.Verdict
	Severity   string
	Figures    []Setting
	Periods    []period
	Charts     []chart
	Stages     []stageRow
	Straggler  *int
	ChangePart string // MinChangePart in words
}

// chart is one figure: an SVG, or why there is none.
type chart struct {
	ID, Title, Caption string
	SVG                template.HTML
	Missing            string
	Legend             []legendItem // the stage colours, for the stacked chart
}

// legendItem is one colour of a chart's legend.
type legendItem struct{ Class, Name string }

type stageRow struct{ Name, Mean, P50, P99, Share, GPU string }

// Write writes the report as one HTML page.
func Write(w io.Writer, r Report) error {
	if err := page.Execute(w, makeView(r)); err != nil {
		return fmt.Errorf("report: write the page: %w", err)
	}
	return nil
}

func makeView(r Report) view {
	run := r.Run
	v := view{R: r, Title: fmt.Sprintf("%s — pipetop run report", run.Name), Verdict: run.Verdict,
		Severity: run.Verdict.Severity().String(), ChangePart: fmt.Sprintf("%.0f %%", 100*MinChangePart)}
	if run.StartNs > 0 {
		v.Started = time.Unix(0, run.StartNs).UTC().Format("2006-01-02 15:04:05 UTC")
	}
	s := run.Whole
	v.Figures = []Setting{{"steps", units.Count(int64(s.Steps))}, {"duration", clock(run.DurationSec)},
		{"steps/s", units.Rate(s.StepsPerSec)}, {"step time p50", units.Dur(s.WallP50)}, {"step time p99", units.Dur(s.WallP99)}}
	if s.SamplesPerSec > 0 {
		v.Figures = append(v.Figures, Setting{"samples/s", units.Rate(s.SamplesPerSec)})
	}
	for _, p := range run.Verdicts {
		sev := "warn"
		if info, ok := verdict.InfoOfKind(p.Kind); ok {
			sev = info.Severity.String()
		}
		v.Periods = append(v.Periods, period{From: p.FromSec, To: p.ToSec, Kind: string(p.Kind), Headline: p.Headline, Severity: sev})
	}
	for _, st := range s.Stages {
		row := stageRow{Name: st.Name, Mean: units.Dur(st.Mean), P50: units.Dur(st.P50), P99: units.Dur(st.P99),
			Share: fmt.Sprintf("%.1f %%", 100*st.Share), GPU: "—"}
		if st.HasGPU {
			row.GPU = units.Dur(st.GPUMean)
		}
		v.Stages = append(v.Stages, row)
	}
	v.Straggler = stragglerOf(run.Verdict)
	v.Charts = charts(r, v)
	return v
}

// stragglerOf is the rank a straggler verdict names; nil for another.
func stragglerOf(v verdict.Verdict) *int {
	if v.Kind == verdict.Straggler {
		return v.Rank
	}
	return nil
}

// noPlots says why a summary file has no plots.
const noPlots = "a run summary holds no readings over time: record the run (pipetop record, pipetop run --record FILE, PIPETOP_RECORD=FILE) for this plot"

// charts draws every figure of the page, in order.
func charts(r Report, v view) []chart {
	run := r.Run
	xmax := run.DurationSec
	if n := len(run.Throughput); n > 0 {
		xmax = max(xmax, run.Throughput[n-1].AtSec)
	}
	need := func(c chart, ok bool, why string) chart {
		if !ok {
			c.SVG, c.Missing = "", why
			if !r.Recorded {
				c.Missing = noPlots
			}
		}
		return c
	}
	buckets := len(run.Throughput) > 0
	out := []chart{
		need(chart{ID: "verdicts", Title: "Verdict over time",
			Caption: fmt.Sprintf("each stretch judged over the %v before it, as pipetop export does", 30*time.Second),
			SVG:     timeline("chart-verdicts", "verdicts over time", xmax, v.Periods)}, len(v.Periods) > 0, "no verdicts over time: the run has no steps"),
		need(stepChart(run.Throughput, xmax, r.Changes), buckets, "no steps"),
		need(shareChart(run, xmax, r.Changes), buckets, "no steps"),
		need(rateChart(run, xmax), buckets, "no steps"),
		need(loaderChart(r.Loader, xmax), len(r.Loader) > 0, "no loader statistics in this recording (the loader publishes none)"),
		need(hostChart(r.Host, xmax), len(r.Host) > 0, "no host readings in this recording (a Python run's own PIPETOP_RECORD has none; pipetop record and pipetop run --record sample the host)"),
	}
	if len(r.Ranks) > 1 {
		strag := -1
		if v.Straggler != nil {
			strag = *v.Straggler
		}
		out = append(out, chart{ID: "ranks", Title: "Ranks × time",
			Caption: "each rank's step time outside comm (the time the other ranks wait for it), per bucket; darker is longer",
			SVG:     heatMap("chart-ranks", "ranks by time", xmax, run.BucketSec, r.Ranks, strag)})
	}
	return out
}

func stepChart(ps []summary.Point, xmax float64, cs []Change) chart {
	var x, p50, p99 []float64
	for _, p := range ps {
		x = append(x, p.AtSec)
		p50, p99 = append(p50, nanIfZero(p.WallP50Ns)/1e6), append(p99, nanIfZero(p.WallP99Ns)/1e6)
	}
	ms := func(y float64) string { return units.Dur(y * 1e6) }
	return chart{ID: "step-time", Title: "Step time", Caption: "p50 and p99 of each bucket's steps",
		SVG: lineChart("chart-step-time", "step time p50 and p99", xmax,
			[]series{{"p50", "s-p50", x, p50}, {"p99", "s-p99", x, p99}}, ms, changeMarks(cs, true))}
}

func shareChart(run summary.Run, xmax float64, cs []Change) chart {
	var names []string
	for _, st := range run.Whole.Stages {
		names = append(names, st.Name)
	}
	var bands []band
	for _, p := range run.Throughput {
		if p.Steps == 0 {
			continue
		}
		b := band{from: max(0, p.AtSec-run.BucketSec), to: p.AtSec}
		for _, n := range names {
			b.shares = append(b.shares, p.Shares[n])
		}
		bands = append(bands, b)
	}
	c := chart{ID: "stages", Title: "Stage shares over time", Caption: "each stage's share of the step, per bucket; lines mark the largest step change of a stage",
		SVG: stackedChart("chart-stages", "stage shares over time", xmax, names, bands, changeMarks(cs, false))}
	c.Legend = legendOf(names)
	return c
}

func rateChart(run summary.Run, xmax float64) chart {
	var x, y []float64
	unit := "samples/s"
	if run.Whole.SamplesPerSec <= 0 {
		unit = "steps/s"
	}
	for _, p := range run.Throughput {
		x = append(x, p.AtSec)
		if unit == "samples/s" {
			y = append(y, p.SamplesPerSec)
		} else {
			y = append(y, p.StepsPerSec)
		}
	}
	return chart{ID: "throughput", Title: "Throughput", Caption: unit + " per bucket",
		SVG: lineChart("chart-throughput", "throughput", xmax, []series{{unit, "s-rate", x, y}}, units.Rate, nil)}
}

func loaderChart(ls []LoaderPoint, xmax float64) chart {
	var x, busy, fill, hit, amp []float64
	for _, l := range ls {
		x = append(x, l.AtSec)
		busy, fill, hit = append(busy, 100*l.WorkerBusy), append(fill, 100*l.QueueFill), append(hit, 100*l.CacheHitRate)
		amp = append(amp, l.ReadAmp)
	}
	pct := func(y float64) string { return fmt.Sprintf("%.0f %%", y) }
	svg := lineChart("chart-loader", "loader statistics", xmax, []series{{"worker busy", "s-busy", x, busy},
		{"queue full", "s-fill", x, fill}, {"cache hits", "s-hit", x, hit}}, pct, nil)
	svg += lineChart("chart-read-amp", "read amplification", xmax, []series{{"read amplification", "s-amp", x, amp}},
		func(y float64) string { return fmt.Sprintf("%.2g×", y) }, nil)
	return chart{ID: "loader", Title: "Loader", Caption: "worker busy share, ready-batch queue fill and chunk cache hit rate; below, read amplification (bytes decompressed per byte used)", SVG: svg}
}

func hostChart(hs []HostPoint, xmax float64) chart {
	var x, cpu, gpu []float64
	hasGPU := false
	for _, h := range hs {
		x = append(x, h.AtSec)
		cpu, gpu = append(cpu, deref(h.CPU)), append(gpu, deref(h.GPU))
		hasGPU = hasGPU || h.GPU != nil
	}
	ss := []series{{"CPU busy", "s-cpu", x, cpu}}
	caption := "CPU busy over all cores"
	if hasGPU {
		ss = append(ss, series{"GPU SM activity", "s-gpu", x, gpu})
		caption += " and GPU activity (SM activity, else kernel-active), mean over the GPUs"
	} else {
		caption += "; no GPU readings in this recording"
	}
	return chart{ID: "host", Title: "CPU and GPU", Caption: caption,
		SVG: lineChart("chart-host", "CPU and GPU over time", xmax, ss, func(y float64) string { return fmt.Sprintf("%.0f %%", y) }, nil)}
}

// changeMarks marks the step time's change (step) or the stages' (!step).
func changeMarks(cs []Change, step bool) []mark {
	var ms []mark
	for _, c := range cs {
		if (c.Stage == StepTime) != step {
			continue
		}
		label := fmt.Sprintf("%s %s → %s at %s", c.Stage, units.Dur(c.BeforeNs), units.Dur(c.AfterNs), clock(c.AtSec))
		ms = append(ms, mark{atSec: c.AtSec, label: label, class: "change",
			attrs: fmt.Sprintf(` data-stage="%s" data-before-ms="%.3f" data-after-ms="%.3f"`, template.HTMLEscapeString(c.Stage), c.BeforeNs/1e6, c.AfterNs/1e6)})
	}
	return ms
}

func nanIfZero(v float64) float64 {
	if v == 0 {
		return math.NaN()
	}
	return v
}

func deref(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}
