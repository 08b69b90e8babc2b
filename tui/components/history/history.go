// Package history draws sparklines of the recent past, one value per
// refresh: step rate, GPU busy and CPU load, as graphs several rows tall
// when the screen has rows to spare.
package history

import (
	"math"
	"strings"

	"github.com/pipetop/pipetop/metrics/units"
	"github.com/pipetop/pipetop/tui/components/pane"
	"github.com/pipetop/pipetop/tui/draw"
	"github.com/pipetop/pipetop/tui/styles"
)

// Model is the history pane.
type Model struct{ pane.Base }

// New returns a history pane drawn with st.
func New(st *styles.Styles) Model { return Model{pane.New(st)} }

// Title is the pane title.
func (m Model) Title() string { return "history" }

// Size returns the fewest and the preferred number of body lines.
func (m Model) Size(int) (lo, pref int) { return 1, 3 }

// MaxSize is the most body lines the pane can use: graphs of up to
// MaxRows rows for the series that have readings, one row for the others.
func (m Model) MaxSize(int) int {
	n := 0
	for _, s := range m.series() {
		n += rowsFor(s)
	}
	return n
}

// MaxRows is the most rows one series' graph grows to when the screen has
// rows to spare.
const MaxRows = 12

// View renders the body: one row per series, taller graphs when the pane
// has more than one row for each.
func (m Model) View() string {
	if m.Snap == nil {
		return ""
	}
	ss := m.series()
	var lines []string
	for i, rows := range heights(ss, m.H) {
		lines = append(lines, m.graph(ss[i], rows)...)
	}
	return draw.Block(strings.Join(lines, "\n"), m.W, m.H)
}

// series is one history line: its label, values, the value drawn at full
// height, and the newest value as text.
type series struct {
	label string
	vals  []float64
	top   float64
	now   string
}

func (m Model) series() []series {
	if m.Snap == nil {
		return nil
	}
	h := m.Snap.History
	rate, rateTop := last(h.StepsPerSec)
	busy, _ := last(h.GPUBusy)
	cpu, _ := last(h.CPU)
	return []series{
		{"it/s", h.StepsPerSec, rateTop, units.Rate(rate)},
		{"GPU %", h.GPUBusy, 100, pct(busy)},
		{"CPU %", h.CPU, 100, pct(cpu)},
	}
}

// rowsFor is the most rows worth giving a series: MaxRows when it has a
// reading to draw, one otherwise.
func rowsFor(s series) int {
	if s.top <= 0 {
		return 1
	}
	for _, v := range s.vals {
		if !math.IsNaN(v) {
			return MaxRows
		}
	}
	return 1
}

// heights shares h rows among the series: one each, then the rest one at
// a time, in order, to the series that can use more.
func heights(ss []series, h int) []int {
	rows := make([]int, len(ss))
	for i := range rows {
		rows[i] = 1
	}
	for left := h - len(ss); left > 0; {
		gave := false
		for i, s := range ss {
			if left > 0 && rows[i] < rowsFor(s) {
				rows[i]++
				left--
				gave = true
			}
		}
		if !gave {
			break
		}
	}
	return rows
}

// Label and value columns beside the graphs.
const labelW, valueW = 6, 7

// graph draws a series in rows lines: the label and newest value on the
// first, the graph to their right.
func (m Model) graph(s series, rows int) []string {
	sw := m.W - labelW - valueW
	if sw < 1 {
		return []string{m.St.Label.Render(s.label) + " " + m.St.Value.Render(s.now)}
	}
	var bars []string
	if rows <= 1 {
		bars = []string{draw.Spark(s.vals, sw, s.top)}
	} else {
		bars = columns(s.vals, sw, s.top, rows)
	}
	pad := strings.Repeat(" ", labelW)
	out := make([]string, len(bars))
	for i, b := range bars {
		label, value := pad, ""
		if i == 0 {
			label, value = draw.Fit(s.label, labelW), m.St.Value.Render(draw.Fit(" "+s.now, valueW))
		}
		out[i] = m.St.Label.Render(label) + m.St.Sparkline.Render(b) + value
	}
	return out
}

// columns draws the last w values as a graph rows lines tall, top line
// first, scaled so that top fills a column; every reading shows at least
// the lowest eighth, NaN draws an empty column. Fewer values than w are
// right-aligned.
func columns(values []float64, w int, top float64, rows int) []string {
	if len(values) > w {
		values = values[len(values)-w:]
	}
	eighths := make([]int, len(values)) // filled eighths of each column, -1 for none
	for i, v := range values {
		eighths[i] = -1
		if !math.IsNaN(v) && top > 0 {
			eighths[i] = max(1, min(rows*8, int(math.Round(v/top*float64(rows*8)))))
		}
	}
	lead := strings.Repeat(" ", w-len(values))
	out := make([]string, rows)
	for r := range rows {
		floor := (rows - 1 - r) * 8 // eighths below this line
		var b strings.Builder
		b.WriteString(lead)
		for _, e := range eighths {
			b.WriteRune(cell(e - floor))
		}
		out[r] = b.String()
	}
	return out
}

// cell is one graph cell filled n eighths from the bottom.
func cell(n int) rune {
	if n <= 0 {
		return ' '
	}
	return blocks[min(n, 8)-1]
}

// blocks are the cell heights from one eighth to full.
var blocks = []rune{'▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'}

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
