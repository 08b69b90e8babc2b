// Package cpu is the CPU pane: one compact bar per core laid out in as many
// columns as fit (one cell per core when there are too many for bars, so 2
// to 128 cores always fit), memory and load, then the trainer process and
// its busiest descendants (loader workers).
package cpu

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/pipetop/pipetop/metrics/units"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/tui/components/pane"
	"github.com/pipetop/pipetop/tui/draw"
	"github.com/pipetop/pipetop/tui/styles"
)

// Model is the CPU pane.
type Model struct{ pane.Scrolling }

// New returns a CPU pane drawn with st.
func New(st *styles.Styles) Model { return Model{pane.NewScrolling(st)} }

// Scroll moves the lines by d, within bounds.
func (m *Model) Scroll(d int) { m.ScrollBy(d, len(m.lines(m.W, m.H))) }

// Title is the pane title.
func (m Model) Title() string {
	if m.Snap == nil {
		return "CPU"
	}
	c := m.Snap.CPU
	t := fmt.Sprintf("CPU · %d cores", len(c.Cores))
	if c.Total.OK() {
		t += fmt.Sprintf(" · %.0f %%", *c.Total.Value)
	}
	if c.Load1.OK() {
		t += fmt.Sprintf(" · load %.2f %.2f %.2f", c.Load1.Or(0), c.Load5.Or(0), c.Load15.Or(0))
	}
	return t
}

// Size returns the fewest and the preferred number of body lines at width w.
func (m Model) Size(w int) (lo, pref int) {
	if m.Snap == nil {
		return 0, 0
	}
	return compactRows(len(m.Snap.CPU.Cores), w), len(m.full(w))
}

// View renders the body.
func (m Model) View() string {
	lines := m.lines(m.W, m.H)
	off := m.Offset(len(lines))
	return draw.Block(strings.Join(lines[off:], "\n"), m.W, m.H)
}

// unlimited is a height no screen has: lines then never falls back to
// one cell per core for want of rows.
const unlimited = 1 << 20

// full is the body with no limit on its height, rendered once a refresh
// (sizing counts it, drawing shows it when it fits).
func (m Model) full(w int) []string {
	return m.Lines(w, func(w int) []string { return m.lines(w, unlimited) })
}

// lines is the body for a w×h area: core bars when they fit in h with the
// rest, one cell per core otherwise.
func (m Model) lines(w, h int) []string {
	if m.Snap == nil {
		return nil
	}
	if h < unlimited {
		if full := m.full(w); len(full) <= h {
			return full
		}
	}
	rest := m.rest(w)
	cores := m.bars(w)
	if len(cores)+1 > h || len(cores) > MaxBarRows || cores == nil {
		cores = m.compact(w)
	}
	return append(cores, rest...)
}

// cellWidth is the width of one core's bar cell: label, bar, percentage.
func labelWidth(n int) int { return len(fmt.Sprint(max(0, n-1))) + 1 }

// MaxBarRows is the most rows of per-core bars; more cores than fit are
// drawn one cell each.
const MaxBarRows = 16

const (
	minBar  = 6
	pctCell = 5 // " 100%"
)

// bars lays out one bar per core in columns; nil when not one fits.
func (m Model) bars(w int) []string {
	cores := m.Snap.CPU.Cores
	n := len(cores)
	if n == 0 {
		return []string{m.St.Dim.Render("no per-core readings")}
	}
	lw := labelWidth(n)
	minCell := lw + 1 + minBar + pctCell
	cols := min(n, (w+1)/(minCell+1))
	if cols < 1 {
		return nil
	}
	rows := (n + cols - 1) / cols
	cellW := (w+1)/cols - 1
	barW := min(cellW-lw-1-pctCell, 40)
	out := make([]string, rows)
	for i, v := range cores {
		r, c := i%rows, i/rows
		label := m.St.Label.Render(fmt.Sprintf("c%-*d", lw-1, i))
		cell := label + " " + m.coreBar(v, barW)
		if c > 0 {
			out[r] += " "
		}
		out[r] += draw.Fit(cell, cellW)
	}
	return out
}

func (m Model) coreBar(v snapshot.Reading, w int) string {
	if !v.OK() {
		return draw.Bar(w, 0, m.St.BarEmpty, m.St.BarEmpty) + m.St.Dim.Render("    –")
	}
	p := *v.Value
	return draw.Bar(w, p/100, m.St.Load(p), m.St.BarEmpty) + m.St.Value.Render(fmt.Sprintf(" %3.0f%%", p))
}

// compactLabel starts the first line of the one-cell-per-core view.
const compactLabel = "cores "

// compactRows is how many lines compact draws for n cores at width w.
func compactRows(n, w int) int {
	bw := w - len(compactLabel)
	if bw < 1 {
		return 0
	}
	return (n + bw - 1) / bw
}

// compact draws one cell per core (its height is the load), wrapped.
func (m Model) compact(w int) []string {
	cores := m.Snap.CPU.Cores
	vals := make([]float64, len(cores))
	for i, v := range cores {
		vals[i] = v.Or(math.NaN())
	}
	bw := w - len(compactLabel)
	if bw < 1 {
		return nil
	}
	var out []string
	for i := 0; i < len(vals); i += bw {
		chunk := vals[i:min(len(vals), i+bw)]
		l := compactLabel
		if i > 0 {
			l = strings.Repeat(" ", len(compactLabel))
		}
		out = append(out, m.St.Label.Render(l)+m.St.Sparkline.Render(draw.Spark(chunk, len(chunk), 100)))
	}
	return out
}

// rest is the memory line and the trainer's processes.
func (m Model) rest(w int) []string {
	st, c := m.St, m.Snap.CPU
	var out []string
	if c.MemTotal.OK() && c.MemUsed.OK() && *c.MemTotal.Value > 0 {
		used, total := *c.MemUsed.Value, *c.MemTotal.Value
		text := " " + units.Bytes(used) + "/" + units.Bytes(total)
		if c.SwapTotal.Or(0) > 0 {
			text += " swap " + units.Bytes(c.SwapUsed.Or(0))
		}
		bw := max(4, min(30, w-4-draw.Width(text)))
		out = append(out, st.Label.Render("mem ")+draw.Bar(bw, used/total, st.Load(100*used/total), st.BarEmpty)+st.Value.Render(text))
	}
	p := m.Snap.Process
	switch {
	case p == nil:
	case !p.Alive:
		out = append(out, st.Dim.Render(fmt.Sprintf("trainer pid %d: not running (or not visible here)", p.Self.PID)))
	default:
		out = append(out, m.proc("trainer", p.Self))
		kids := append([]snapshot.Proc(nil), p.Children...)
		sort.SliceStable(kids, func(i, j int) bool { return kids[i].CPU.Or(0) > kids[j].CPU.Or(0) })
		for i, k := range kids {
			if i == 3 {
				out = append(out, st.Dim.Render(fmt.Sprintf("  … %d more", len(kids)-3)))
				break
			}
			out = append(out, m.proc("  └", k))
		}
	}
	return out
}

func (m Model) proc(tag string, p snapshot.Proc) string {
	st := m.St
	cpu := "–"
	if p.CPU.OK() {
		cpu = fmt.Sprintf("%.0f %%", *p.CPU.Value)
	}
	s := st.Label.Render(tag+" ") + st.Value.Render(fmt.Sprintf("%d %s", p.PID, p.Comm)) + "  " +
		st.Label.Render("cpu ") + st.Load(p.CPU.Or(0)/max(1, p.Threads.Or(1))).Render(cpu)
	if p.RSS.OK() {
		s += "  " + st.Label.Render("rss ") + st.Value.Render(units.Bytes(*p.RSS.Value))
	}
	if p.Threads.OK() {
		s += "  " + st.Dim.Render(fmt.Sprintf("%.0f thr", *p.Threads.Value))
	}
	return s
}
