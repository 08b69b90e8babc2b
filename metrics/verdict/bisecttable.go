package verdict

import (
	"fmt"
	"io"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
)

// PhaseHeader is the header of both bisects' table: shares of the step in
// %, one column per stage of stage.Canonical, labelled as stage.Known
// says, and the share of the step the GPU was busy.
var PhaseHeader = phaseHeader()

func phaseHeader() string {
	var sb strings.Builder
	sb.WriteString("phase       batch     it/s smp/s    ")
	for _, name := range stage.Canonical {
		k, _ := stage.InfoOf(name)
		fmt.Fprintf(&sb, " %4s", k.Short)
	}
	sb.WriteString("  GPU")
	return sb.String()
}

// Row is the phase's line of the bisect table; a phase that was not
// measured says what happened instead of its figures.
func (p PhaseResult) Row() string {
	if p.Status == PhaseSkipped || p.Status == PhaseFailed || p.Status == PhaseRefused || (p.Status != "" && p.Steps == 0) {
		return fmt.Sprintf("%-11s %s", p.Name, p.outcome())
	}
	return shareRow(p.Name, p.Batch, p.StepsPerSec, p.SamplesPerSec, p.Summary)
}

// RankRow is a rank's line under its phase in a run of several ranks.
func (r RankPhase) RankRow() string {
	return shareRow(fmt.Sprintf("  rank %d", r.Rank), 0, r.StepsPerSec, r.SamplesPerSec, r.Summary)
}

// shareRow is one table line: throughput, the stages' shares, GPU busy.
func shareRow(label string, batch int, stepsPerSec, samplesPerSec float64, s stage.Summary) string {
	var sb strings.Builder
	b := "     "
	if batch > 0 {
		b = fmt.Sprintf("%5d", batch)
	}
	fmt.Fprintf(&sb, "%-11s %s %8.2f %9.1f", label, b, stepsPerSec, samplesPerSec)
	for _, name := range stage.Canonical {
		if st := s.Stage(name); st != nil && s.Steps > 0 {
			fmt.Fprintf(&sb, " %4.0f", 100*st.Share)
		} else {
			sb.WriteString("    -")
		}
	}
	if s.HasGPU {
		fmt.Fprintf(&sb, " %4.0f", 100*s.GPUBusy)
	} else {
		sb.WriteString("    -")
	}
	return sb.String()
}

// outcome says why a phase has no figures.
func (p PhaseResult) outcome() string {
	switch {
	case p.Status == PhaseFailed && p.ExitStatus != nil:
		return fmt.Sprintf("failed (exit status %d)", *p.ExitStatus)
	case (p.Status == PhaseSkipped || p.Status == PhaseRefused) && len(p.Notes) > 0:
		return p.Status + ": " + p.Notes[0]
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
