// Package stages is the stage table: per stage mean, p50 and p99 of CPU
// wall time, share of the step, and GPU mean and p99 where known, over the
// selected window. It is shown on demand (key s).
package stages

import (
	"fmt"
	"strings"

	"github.com/pipetop/pipetop/metrics/units"
	"github.com/pipetop/pipetop/tui/components/pane"
	"github.com/pipetop/pipetop/tui/draw"
	"github.com/pipetop/pipetop/tui/styles"
)

// Model is the stage table pane.
type Model struct{ pane.Scrolling }

// New returns a stage table drawn with st.
func New(st *styles.Styles) Model { return Model{pane.NewScrolling(st)} }

// Scroll moves the rows by d, within bounds.
func (m *Model) Scroll(d int) { m.ScrollBy(d, len(m.Lines(0, m.lines))) }

// Title is the pane title.
func (m Model) Title() string {
	if m.Snap != nil && m.Snap.Remote != nil {
		return "stages · means (no per-stage p50/p99 remotely)"
	}
	return "stages · p50/p99 per stage"
}

// Size returns the fewest and the preferred number of body lines.
func (m Model) Size(int) (lo, pref int) { return 2, len(m.Lines(0, m.lines)) }

// View renders the body.
func (m Model) View() string {
	lines := m.Lines(0, m.lines)
	off := m.Offset(len(lines))
	if off > 0 {
		lines = append(lines[:1:1], lines[1+off:]...)
	}
	return draw.Block(strings.Join(lines, "\n"), m.W, m.H)
}

const rowFmt = "%-12s %9s %9s %9s %6s %9s %9s"

const swatchPad = "  "

func (m Model) lines(int) []string {
	if m.Snap == nil {
		return nil
	}
	s := m.Snap.Summary
	if s == nil {
		return []string{m.St.Dim.Render("no steps yet")}
	}
	out := []string{swatchPad + m.St.Label.Render(fmt.Sprintf(rowFmt, "stage", "mean", "p50", "p99", "share", "gpu mean", "gpu p99"))}
	// A remote view has stage means from counters, no stage quantiles.
	remote := m.Snap.Remote != nil
	for _, st := range s.Stages {
		gm, gp := "–", "–"
		if st.HasGPU {
			gm, gp = units.Dur(st.GPUMean), units.Dur(st.GPUP99)
		}
		p50, p99 := units.Dur(st.P50), units.Dur(st.P99)
		if remote {
			p50, p99, gp = "–", "–", "–"
		}
		row := fmt.Sprintf(rowFmt, draw.Fit(st.Name, 12), units.Dur(st.Mean), p50, p99,
			units.Pct(st.Share), gm, gp)
		out = append(out, m.St.Swatch(st.Name).Render("■")+" "+m.St.Value.Render(row))
	}
	step := fmt.Sprintf(rowFmt, "step (wall)", units.Dur(s.WallMean), units.Dur(s.WallP50), units.Dur(s.WallP99), "100 %", "", "")
	return append(out, swatchPad+m.St.Title.Render(step))
}
