package report

import (
	"cmp"
	_ "embed"
	"fmt"
	"html"
	"html/template"
	"io"
	"slices"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/bisect"
	"github.com/pipetop/pipetop/monitor/loadertext"
)

// Bisect is what the bisect page shows: a pipetop bisect report and the
// links to its phases' own run reports.
type Bisect struct {
	File   string // the file the report was read from
	Report bisect.Report
	// Links are the phases' own run reports by phase name, as links
	// relative to the page.
	Links map[string]string
}

//go:embed bisect.html.tmpl
var bisectText string

var bisectPage = parsePage("bisect", bisectText)

// WriteBisect writes the bisect page as one HTML page: the verdict on top,
// the phases side by side, their samples/s as a bar chart.
func WriteBisect(w io.Writer, b Bisect) error {
	if err := bisectPage.Execute(w, makeBisectView(b)); err != nil {
		return fmt.Errorf("report: write the bisect page: %w", err)
	}
	return nil
}

// bisectView is what the bisect template fills in.
type bisectView struct {
	B         Bisect
	Title     string
	Command   string
	Figures   []Setting
	Verdict   verdict.Verdict
	Severity  string
	Straggler *int // the rank the verdict names a straggler, if any
	Legend    []legendItem
	Phases    []phaseCard
	Rates     template.HTML
}

// phaseCard is one phase's column.
type phaseCard struct {
	Name, Status, Link string
	Outcome            string // why a phase without figures has none
	Figures            []Setting
	Bar                template.HTML // its stage shares, stacked
	Notes              []string
	Own                *ownVerdict
	Failure            *failure
	Ranks              []rankLine
}

// ownVerdict is a phase's (or rank's) own verdict.
type ownVerdict struct{ Kind, Headline, Severity string }

// failure is a failed phase's exit status and the end of its stderr.
type failure struct{ Exit, Stderr string }

// rankLine is one rank's row in its phase's card.
type rankLine struct {
	Rank                     int
	StepsPerSec, SamplesPerS string
	Bar                      template.HTML
	Own                      *ownVerdict
}

func makeBisectView(b Bisect) bisectView {
	r := b.Report
	cmd := strings.Join(r.Command, " ")
	v := bisectView{B: b, Title: fmt.Sprintf("bisect of %s — pipetop bisect report", cmd), Command: cmd,
		Verdict: r.Verdict, Severity: r.Verdict.Severity().String(), Straggler: stragglerOf(r.Verdict)}
	v.Figures = []Setting{{"host", r.Host}, {"started", r.Started.UTC().Format("2006-01-02 15:04:05 UTC")},
		{"seconds per phase", fmt.Sprintf("%g s", r.SecondsPerPhase)}, {"phases", fmt.Sprint(len(r.Phases))}}
	colour := stageClasses(stageNames(r.Phases))
	v.Legend = legendOf(stageNames(r.Phases))
	for _, p := range r.Phases {
		v.Phases = append(v.Phases, card(p, b.Links[p.Name], colour))
	}
	v.Rates = rateBars("chart-phase-rates", r.Phases)
	return v
}

// stageNames are the stages of every phase (and rank), each once: the
// known ones in stage.Known's order, then the custom ones as they first
// appear.
func stageNames(phases []verdict.PhaseResult) []string {
	var names []string
	seen := map[string]bool{}
	add := func(s stage.Summary) {
		for _, st := range s.Stages {
			if !seen[st.Name] {
				seen[st.Name] = true
				names = append(names, st.Name)
			}
		}
	}
	for _, p := range phases {
		add(p.Summary)
		for _, rk := range p.Ranks {
			add(rk.Summary)
		}
	}
	slices.SortStableFunc(names, func(a, b string) int { return cmp.Compare(knownPlace(a), knownPlace(b)) })
	return names
}

// knownPlace is the stage's place in stage.Known; after them all for a
// custom stage.
func knownPlace(name string) int {
	if i := slices.IndexFunc(stage.Known, func(k stage.Info) bool { return k.Name == name }); i >= 0 {
		return i
	}
	return len(stage.Known)
}

// card is phase p's column; link is its own report, if any.
func card(p verdict.PhaseResult, link string, colour map[string]string) phaseCard {
	c := phaseCard{Name: p.Name, Status: statusOf(p), Link: link, Notes: p.Notes}
	if !hasFigures(p) {
		c.Outcome = outcome(p)
	} else {
		c.Figures = phaseFigures(p)
		c.Bar = shareBar(p.Name, p.Summary, colour)
	}
	if p.Verdict != nil && p.Measured() {
		c.Own = own(p.Verdict)
	}
	if p.Status == verdict.PhaseFailed {
		c.Failure = &failure{Exit: "unknown", Stderr: p.StderrTail}
		if p.ExitStatus != nil {
			c.Failure.Exit = fmt.Sprint(*p.ExitStatus)
		}
	}
	if len(p.Ranks) > 1 {
		for _, rk := range p.Ranks {
			c.Ranks = append(c.Ranks, rankLine{Rank: rk.Rank, StepsPerSec: units.Rate(rk.StepsPerSec), SamplesPerS: units.Rate(rk.SamplesPerSec),
				Bar: shareBar(fmt.Sprintf("%s rank %d", p.Name, rk.Rank), rk.Summary, colour), Own: own(rk.Verdict)})
		}
	}
	return c
}

// statusOf is p's status; pipetrain bisect's phases, which name none, are
// ok.
func statusOf(p verdict.PhaseResult) string {
	if p.Status == "" {
		return verdict.PhaseOK
	}
	return p.Status
}

// hasFigures is whether the phase measured steps: it neither failed nor
// was skipped, and it got past its warm-up.
func hasFigures(p verdict.PhaseResult) bool {
	return p.Status != verdict.PhaseSkipped && p.Status != verdict.PhaseFailed && p.Steps > 0
}

// outcome says why a phase has no figures.
func outcome(p verdict.PhaseResult) string {
	switch p.Status {
	case verdict.PhaseFailed:
		return "the command failed: no figures"
	case verdict.PhaseSkipped:
		return "skipped: it could not run (the notes say why)"
	}
	return "stopped before a step was measured"
}

// phaseFigures are a measured phase's numbers, as the bisect table has
// them, and its loader's and threads' when it has them.
func phaseFigures(p verdict.PhaseResult) []Setting {
	f := []Setting{{"batch", fmt.Sprint(p.Batch)}, {"it/s", units.Rate(p.StepsPerSec)}, {"samples/s", units.Rate(p.SamplesPerSec)},
		{"GPU busy", "—"}}
	if p.Summary.HasGPU {
		f[3].Value = units.Pct(p.Summary.GPUBusy)
	}
	if p.Waiting != nil {
		f = append(f, Setting{"threads waiting for a CPU", fmt.Sprintf("%.1f", *p.Waiting)})
	}
	if l := p.Loader; l != nil {
		f = append(f, Setting{"loader workers busy", fmt.Sprintf("%s of %d", units.Pct(l.WorkerBusy), l.Workers)})
		if l.ReadAmp > 0 {
			f = append(f, Setting{"read amplification", fmt.Sprintf("%.1f×", l.ReadAmp)})
		}
		for _, src := range loadertext.Sources(l) {
			f = append(f, Setting{src.Kind, src.Text})
		}
	}
	return f
}

// own is a phase's or rank's own verdict for its card; nil for none.
func own(v *verdict.Verdict) *ownVerdict {
	if v == nil {
		return nil
	}
	return &ownVerdict{Kind: string(v.Kind), Headline: v.Headline, Severity: v.Severity().String()}
}

// shareBar draws a summary's stage shares as one bar stacked to 100 %, in
// the stages' colours.
func shareBar(label string, s stage.Summary, colour map[string]string) template.HTML {
	const w, h = 300.0, 18.0
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg class="share-bar" viewBox="0 0 %.0f %.0f" preserveAspectRatio="none" role="img" aria-label="%s">`,
		w, h, html.EscapeString(label+" stage shares"))
	x := 0.0
	for _, st := range s.Stages {
		if st.Share <= 0 {
			continue
		}
		width := min(st.Share, 1) * w
		fmt.Fprintf(&sb, `<rect class="share %s" data-stage="%s" data-share="%.4f" x="%.2f" y="0" width="%.2f" height="%.0f"><title>%s %.1f %%</title></rect>`,
			colour[st.Name], html.EscapeString(st.Name), st.Share, x, width, h, html.EscapeString(st.Name), 100*st.Share)
		x += width
	}
	sb.WriteString(`</svg>`)
	return template.HTML(sb.String())
}

// rateBars draws each phase's samples/s as a horizontal bar; a phase
// without figures gets its status instead of a bar.
func rateBars(id string, phases []verdict.PhaseResult) template.HTML {
	const w, rowH, l, r = 960.0, 26.0, 110.0, 90.0
	top := 0.0
	for _, p := range phases {
		if p.Measured() {
			top = max(top, p.SamplesPerSec)
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg id="%s" class="chart" viewBox="0 0 %.0f %.0f" role="img" aria-label="samples/s by phase">`,
		id, w, float64(len(phases))*rowH+10)
	for i, p := range phases {
		y := 5 + float64(i)*rowH
		fmt.Fprintf(&sb, `<g class="phase-rate" data-phase="%s" data-samples-per-sec="%.3f"><text class="row-label" x="%.1f" y="%.1f" text-anchor="end">%s</text>`,
			html.EscapeString(p.Name), p.SamplesPerSec, l-8, y+rowH/2+4, html.EscapeString(p.Name))
		value, bw := statusOf(p), rateWidth(p, top, w-l-r)
		if p.Measured() {
			fmt.Fprintf(&sb, `<rect class="rate-bar" x="%.1f" y="%.1f" width="%.2f" height="%.1f"/>`, l, y+3, bw, rowH-6)
			value = units.Rate(p.SamplesPerSec)
		}
		fmt.Fprintf(&sb, `<text class="tick" x="%.1f" y="%.1f">%s</text></g>`, l+4+bw, y+rowH/2+4, html.EscapeString(value))
	}
	sb.WriteString(`</svg>`)
	return template.HTML(sb.String())
}

// rateWidth is the width of p's bar in a chart of span pixels whose
// longest bar is top samples/s.
func rateWidth(p verdict.PhaseResult, top, span float64) float64 {
	if !p.Measured() {
		return 0
	}
	return p.SamplesPerSec / top * span
}
