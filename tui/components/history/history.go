// Package history draws sparklines of the recent past, one value per
// refresh: step rate, GPU busy and CPU load.
package history

import (
	"math"
	"strings"

	"github.com/pipetop/pipetop/tui/components/pane"
	"github.com/pipetop/pipetop/tui/draw"
	"github.com/pipetop/pipetop/tui/styles"
	"github.com/pipetop/pipetop/tui/units"
)

// Model is the history pane.
type Model struct{ pane.Base }

// New returns a history pane drawn with st.
func New(st *styles.Styles) Model { return Model{pane.New(st)} }

// Title is the pane title.
func (m Model) Title() string { return "history" }

// Size returns the fewest and the preferred number of body lines.
func (m Model) Size(int) (lo, pref int) { return 1, 3 }

// View renders the body.
func (m Model) View() string {
	if m.Snap == nil {
		return ""
	}
	h := m.Snap.History
	rate, rateTop := last(h.StepsPerSec)
	busy, _ := last(h.GPUBusy)
	cpu, _ := last(h.CPU)
	lines := []string{
		m.row("it/s", h.StepsPerSec, rateTop, units.Rate(rate)),
		m.row("GPU %", h.GPUBusy, 100, pct(busy)),
		m.row("CPU %", h.CPU, 100, pct(cpu)),
	}
	return draw.Block(strings.Join(lines, "\n"), m.W, m.H)
}

func (m Model) row(label string, vals []float64, top float64, now string) string {
	const lw, vw = 6, 7
	sw := m.W - lw - vw
	if sw < 1 {
		return m.St.Label.Render(label) + " " + m.St.Value.Render(now)
	}
	return m.St.Label.Render(draw.Fit(label, lw)) + m.St.Sparkline.Render(draw.Spark(vals, sw, top)) +
		m.St.Value.Render(draw.Fit(" "+now, vw))
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
