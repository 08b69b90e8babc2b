package verdict

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
)

// PhaseTable lays out a bisect's table: the phase, batch and throughput,
// one column per stage (% of the step), the share of the step the GPU
// was busy and, when asked, each phase's peak RSS (the script's, bisect's
// cache counted apart).
type PhaseTable struct {
	stages []string
	gpu    bool
	rss    bool
}

// fullTable has every canonical stage and the GPU: pipetrain bisect's.
var fullTable = PhaseTable{stages: stage.Canonical, gpu: true}

// PhaseHeader is the header of pipetrain bisect's table: shares of the
// step in %, one column per stage of stage.Canonical, labelled as
// stage.Known says, and the share of the step the GPU was busy.
var PhaseHeader = fullTable.Header()

// alwaysShown are the stage columns a PhaseTable keeps even when no
// phase has them.
var alwaysShown = []string{stage.DataWait, stage.Forward, stage.Backward, stage.Optim, stage.Other}

// NewPhaseTable is the table of phases: the canonical stages any phase
// spent time in (data_wait, forward, backward, optim and other always),
// the GPU column when any phase was timed on one, and the peak RSS column
// with rss. It fits 80 columns on a CPU.
func NewPhaseTable(phases []PhaseResult, rss bool) PhaseTable {
	t := PhaseTable{rss: rss}
	for _, name := range stage.Canonical {
		shown := slices.Contains(alwaysShown, name)
		for _, p := range phases {
			if st := p.Summary.Stage(name); st != nil && st.Share > 0 {
				shown = true
			}
			t.gpu = t.gpu || p.Summary.HasGPU
		}
		if shown {
			t.stages = append(t.stages, name)
		}
	}
	return t
}

// Header is the table's header line.
func (t PhaseTable) Header() string {
	var sb strings.Builder
	sb.WriteString("phase       batch     it/s smp/s    ")
	for _, name := range t.stages {
		k, _ := stage.InfoOf(name)
		fmt.Fprintf(&sb, " %4s", k.Short)
	}
	if t.gpu {
		sb.WriteString("  GPU")
	}
	if t.rss {
		sb.WriteString("  peak RSS")
	}
	return sb.String()
}

// Row is the phase's line of the bisect table; a phase that was not
// measured says what happened instead of its figures.
func (p PhaseResult) Row() string { return fullTable.Row(p) }

// Row is the phase's line; a phase that was not measured says what
// happened instead of its figures.
func (t PhaseTable) Row(p PhaseResult) string {
	if p.Status == PhaseSkipped || p.Status == PhaseFailed || p.Status == PhaseRefused || (p.Status != "" && p.Steps == 0) {
		return fmt.Sprintf("%-11s %s", p.Name, p.outcome())
	}
	row := t.shareRow(p.Name, p.Batch, p.StepsPerSec, p.SamplesPerSec, p.Summary)
	if t.rss {
		row += fmt.Sprintf("  %8s", rssText(p.ScriptRSS()))
	}
	return row
}

// RankRow is a rank's line under its phase in a run of several ranks.
func (r RankPhase) RankRow() string { return fullTable.RankRow(r) }

// RankRow is a rank's line under its phase in a run of several ranks.
func (t PhaseTable) RankRow(r RankPhase) string {
	return t.shareRow(fmt.Sprintf("  rank %d", r.Rank), 0, r.StepsPerSec, r.SamplesPerSec, r.Summary)
}

// shareRow is one table line: throughput, the stages' shares, GPU busy.
func (t PhaseTable) shareRow(label string, batch int, stepsPerSec, samplesPerSec float64, s stage.Summary) string {
	var sb strings.Builder
	b := "     "
	if batch > 0 {
		b = fmt.Sprintf("%5d", batch)
	}
	fmt.Fprintf(&sb, "%-11s %s %8.2f %9.1f", label, b, stepsPerSec, samplesPerSec)
	for _, name := range t.stages {
		if st := s.Stage(name); st != nil && s.Steps > 0 {
			fmt.Fprintf(&sb, " %4.0f", 100*st.Share)
		} else {
			sb.WriteString("    -")
		}
	}
	switch {
	case !t.gpu:
	case s.HasGPU:
		fmt.Fprintf(&sb, " %4.0f", 100*s.GPUBusy)
	default:
		sb.WriteString("    -")
	}
	return sb.String()
}

// rssText is bytes as the peak RSS column shows them, "-" for none.
func rssText(b int64) string {
	switch {
	case b <= 0:
		return "-"
	case b >= 10e9:
		return fmt.Sprintf("%.0f GB", float64(b)/1e9)
	case b >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(b)/1e9)
	}
	return fmt.Sprintf("%.0f MB", float64(b)/1e6)
}

// outcome says why a phase has no figures.
func (p PhaseResult) outcome() string {
	switch {
	case p.Status == PhaseFailed && p.ExitStatus != nil:
		return fmt.Sprintf("failed (exit status %d)", *p.ExitStatus)
	case (p.Status == PhaseSkipped || p.Status == PhaseRefused) && len(p.Notes) > 0:
		return p.Status + ": " + p.Notes[0]
	case p.Status == PhaseFailed && p.Cause != "":
		return "failed: " + p.Cause
	case p.Status == PhaseStopped:
		return "stopped before a step was measured"
	}
	return p.Status
}

// WriteWrapped writes text after label, folded at spaces to fit 80
// columns, with continuation lines indented under the text.
func WriteWrapped(w io.Writer, label, text string) {
	const width = 80
	line := label
	for _, word := range strings.Fields(text) {
		if len(line) > len(label) && len(line)+1+len(word) > width {
			fmt.Fprintln(w, line)
			line = strings.Repeat(" ", len(label))
		}
		if len(line) > len(label) {
			line += " "
		}
		line += word
	}
	fmt.Fprintln(w, line)
}
