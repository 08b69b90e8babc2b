// Package history draws sparklines of the recent past, one value per
// refresh: step rate, GPU busy and CPU load.
package history

import (
	"math"
	"strings"

	"github.com/pipetop/pipetop/tui/draw"
	"github.com/pipetop/pipetop/tui/snapshot"
	"github.com/pipetop/pipetop/tui/styles"
	"github.com/pipetop/pipetop/tui/units"
)

// Model is the history pane.
type Model struct {
	st   *styles.Styles
	snap *snapshot.Snapshot
	w, h int
}

// New returns a history pane drawn with st.
func New(st *styles.Styles) Model { return Model{st: st} }

// SetSnapshot sets what to show.
func (m *Model) SetSnapshot(s *snapshot.Snapshot) { m.snap = s }

// SetSize sets the pane's body width and height in cells.
func (m *Model) SetSize(w, h int) { m.w, m.h = w, h }

// Title is the pane title.
func (m Model) Title() string { return "history" }

// Size returns the fewest and the preferred number of body lines.
func (m Model) Size(int) (lo, pref int) { return 1, 3 }

// View renders the body.
func (m Model) View() string {
	if m.snap == nil {
		return ""
	}
	h := m.snap.History
	rate, rateTop := last(h.StepsPerSec)
	busy, _ := last(h.GPUBusy)
	cpu, _ := last(h.CPU)
	lines := []string{
		m.row("it/s", h.StepsPerSec, rateTop, units.Rate(rate)),
		m.row("GPU %", h.GPUBusy, 100, pct(busy)),
		m.row("CPU %", h.CPU, 100, pct(cpu)),
	}
	return draw.Block(strings.Join(lines, "\n"), m.w, m.h)
}

func (m Model) row(label string, vals []float64, top float64, now string) string {
	const lw, vw = 6, 7
	sw := m.w - lw - vw
	if sw < 1 {
		return m.st.Label.Render(label) + " " + m.st.Value.Render(now)
	}
	return m.st.Label.Render(draw.Fit(label, lw)) + m.st.Sparkline.Render(draw.Spark(vals, sw, top)) +
		m.st.Value.Render(draw.Fit(" "+now, vw))
}

// last returns the newest value and the largest one, NaN-aware.
func last(v []float64) (cur, top float64) {
	cur = math.NaN()
	if len(v) > 0 {
		cur = v[len(v)-1]
	}
	for _, x := range v {
		if !math.IsNaN(x) && x > top {
			top = x
		}
	}
	return cur, top
}

func pct(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return units.Pct(v / 100)
}
