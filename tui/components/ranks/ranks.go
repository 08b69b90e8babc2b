// Package ranks is the ranks pane of a multi-process run: the median and
// the slowest rank side by side, then per rank a compact flame row (stage
// shares), the step time and the data_wait and comm shares. From
// AggregateAt ranks on, or when the rows do not fit, it shows a heat strip
// of each rank's step time without comm and the slowest ranks' rows.
package ranks

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/tui/components/pane"
	"github.com/pipetop/pipetop/tui/draw"
	"github.com/pipetop/pipetop/tui/styles"
)

// AggregateAt is the number of ranks from which the pane aggregates.
const AggregateAt = 64

// Worst is the most slowest-rank rows the aggregated view lists.
const Worst = 8

// Model is the ranks pane.
type Model struct {
	pane.Base
	choose Chooser
	keys   KeyMap
}

// Chooser makes the view show another rank's trainer, flame bar and host
// from the next refresh on (a remote view's).
type Chooser func(rank int)

// KeyMap is the keys of a view that can show another rank: the next and
// the previous one.
type KeyMap struct {
	Next, Prev key.Binding
}

// DefaultKeys are the pane's default keys.
var DefaultKeys = KeyMap{
	Next: key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "show the next rank (remote view)")),
	Prev: key.NewBinding(key.WithKeys("R"), key.WithHelp("R", "show the previous rank")),
}

// New returns a ranks pane drawn with st; choose, when not nil, lets its
// keys (r and R by default) change the shown rank of a remote view.
func New(st *styles.Styles, choose Chooser, keys KeyMap) Model {
	return Model{Base: pane.New(st), choose: choose, keys: keys}
}

// Keys are the next and previous rank's (r and R) in a remote view of
// several ranks, else none.
func (m *Model) Keys() []key.Binding {
	if m.choose == nil || m.Snap == nil || m.Snap.Remote == nil || len(m.Snap.Ranks) < 2 {
		return nil
	}
	return []key.Binding{m.keys.Next, m.keys.Prev}
}

// HandleKey shows the next (r) or previous (R) rank, in rank order.
func (m *Model) HandleKey(k tea.KeyPressMsg) (bool, tea.Cmd) {
	step := 0
	switch {
	case m.Keys() == nil:
	case key.Matches(k, m.keys.Next):
		step = 1
	case key.Matches(k, m.keys.Prev):
		step = -1
	}
	if step == 0 {
		return false, nil
	}
	rs := m.Snap.Ranks
	at := 0
	for i, r := range rs {
		if r.Rank == m.Snap.Remote.Rank {
			at = i
		}
	}
	m.choose(rs[(at+step+len(rs))%len(rs)].Rank)
	return true, nil
}

// rank is one rank's numbers; ok is false before it has steps.
type rank struct {
	r          snapshot.Rank
	ok         bool
	wall, work float64 // mean step and step without comm, ns
	wait, comm float64 // data_wait and comm shares of the step
}

func measure(r snapshot.Rank) rank {
	x := rank{r: r}
	s := r.Summary
	if s == nil || s.WallMean <= 0 {
		return x
	}
	x.ok, x.wall = true, s.WallMean
	var comm float64
	for _, st := range s.Stages {
		switch stage.ClassOf(st.Name) {
		case stage.ClassComm:
			comm += st.Mean
		case stage.ClassInput:
			x.wait += st.Share
		}
	}
	x.work, x.comm = s.WallMean-comm, comm/s.WallMean
	return x
}

// ranks returns every rank's numbers and those with steps sorted by work,
// fastest first.
func (m Model) ranks() (all, byWork []rank) {
	if m.Snap == nil {
		return nil, nil
	}
	for _, r := range m.Snap.Ranks {
		x := measure(r)
		all = append(all, x)
		if x.ok {
			byWork = append(byWork, x)
		}
	}
	slices.SortStableFunc(byWork, func(a, b rank) int {
		switch {
		case a.work < b.work:
			return -1
		case a.work > b.work:
			return 1
		}
		return 0
	})
	return all, byWork
}

// aggregated reports whether n ranks in h body lines are shown as a strip.
func aggregated(n, h int) bool { return n >= AggregateAt || (h > 0 && 1+n > h) }

// Title is the pane title.
func (m Model) Title() string {
	if m.Snap == nil {
		return "ranks"
	}
	title := fmt.Sprintf("ranks · %d", len(m.Snap.Ranks))
	if t := m.Snap.Trainer; t != nil && t.Run != "" {
		title += " · run " + t.Run
	}
	if v := m.Snap.Verdict; v != nil && v.Rank != nil {
		title += fmt.Sprintf(" · straggler rank %d", *v.Rank)
	}
	return title
}

// Size returns the fewest and the preferred number of body lines.
func (m Model) Size(w int) (lo, pref int) {
	if m.Snap == nil || len(m.Snap.Ranks) < 2 {
		return 0, 0
	}
	n := len(m.Snap.Ranks)
	if !aggregated(n, 0) {
		return min(1+n, 3), 1 + n
	}
	strip := stripLines(n, w)
	return 1 + strip, 1 + strip + 1 + min(Worst, n)
}

// View renders the body.
func (m Model) View() string { return draw.Block(strings.Join(m.lines(m.W, m.H), "\n"), m.W, m.H) }

func (m Model) lines(w, h int) []string {
	all, byWork := m.ranks()
	if len(all) == 0 || w <= 0 {
		return nil
	}
	if len(byWork) == 0 {
		return []string{m.St.Dim.Render("waiting for steps from the ranks")}
	}
	out := []string{m.compare(byWork, w)}
	labelW, hostW := digits(all), hostWidth(all)
	if !aggregated(len(all), h) {
		for _, x := range all {
			out = append(out, m.row(x, w, labelW, hostW))
		}
		return out
	}
	out = append(out, m.strip(all, byWork, w)...)
	out = append(out, m.St.Dim.Render(fmt.Sprintf("slowest ranks (step w/o comm: %s fastest, %s median)",
		units.Dur(byWork[0].work), units.Dur(median(byWork).work))))
	for i := len(byWork) - 1; i >= 0 && len(out) < max(h, 1+stripLines(len(all), w)+1+min(Worst, len(all))); i-- {
		out = append(out, m.row(byWork[i], w, labelW, hostW))
	}
	return out
}

func median(byWork []rank) rank { return byWork[(len(byWork)-1)/2] }

// compare is the median rank next to the slowest one.
func (m Model) compare(byWork []rank, w int) string {
	med, worst := median(byWork), byWork[len(byWork)-1]
	part := func(label string, x rank) string {
		return m.St.Label.Render(fmt.Sprintf("%s r%d", label, x.r.Rank)) + " " +
			m.St.Value.Render(units.Dur(x.work)) + m.St.Dim.Render(" w/o comm · data_wait ") + m.St.Value.Render(units.Pct(x.wait)) +
			m.St.Dim.Render(" · comm ") + m.St.Value.Render(units.Pct(x.comm))
	}
	return draw.Fit(part("median", med)+m.St.Dim.Render("   vs   ")+part("slowest", worst), w)
}

// rowStats is the width of a row's numbers.
const rowStats = 33

// row is one rank: label, flame row, step time, data_wait and comm.
// labelW and hostW are the widths of the rank numbers and host names (0:
// no host column).
func (m Model) row(x rank, w, labelW, hostW int) string {
	text := fmt.Sprintf("r%-*d ", labelW, x.r.Rank)
	if hostW > 0 {
		text += fmt.Sprintf("%-*s ", hostW, draw.Fit(x.r.Host, hostW))
	}
	label := m.St.Label.Render(text)
	if !x.ok {
		return label + m.St.Dim.Render(x.r.Link+", no steps yet")
	}
	bw := w - labelW - 2 - rowStats
	if hostW > 0 {
		bw -= hostW + 1
	}
	stats := fmt.Sprintf(" %8s  dw %5s  comm %5s", units.Dur(x.wall), units.Pct(x.wait), units.Pct(x.comm))
	if bw < 8 {
		return draw.Fit(label+m.St.Value.Render(stats), w)
	}
	return label + m.flame(x.r.Summary, bw) + m.St.Value.Render(stats)
}

// flame draws a summary's stage shares in w cells: stage colours, or
// without colour each stage's letter (stageRune).
func (m Model) flame(s *stage.Summary, w int) string {
	ns := make([]float64, len(s.Stages))
	for i, st := range s.Stages {
		ns[i] = st.Mean
	}
	cells := draw.Split(ns, max(s.WallMean, sum(ns)), w)
	var b strings.Builder
	used := 0
	for i, st := range s.Stages {
		if cells[i] == 0 {
			continue
		}
		used += cells[i]
		if m.St.Color {
			b.WriteString(m.St.Segment(st.Name).Render(strings.Repeat(" ", cells[i])))
		} else {
			b.WriteString(strings.Repeat(string(stageRune(st.Name)), cells[i]))
		}
	}
	return b.String() + strings.Repeat(" ", w-used)
}

func sum(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s
}

// stageRune is the letter of a stage in a plain flame row: its first
// letter, '.' for other.
func stageRune(name string) rune {
	if name == stage.Other || name == "" {
		return '.'
	}
	return []rune(name)[0]
}

// heat are the levels of the strip, low to high.
var heat = []rune("▁▂▃▄▅▆▇█")

// stripPrefix leads the first strip line.
const stripPrefix = "step w/o comm "

// stripLines is how many lines a strip of n ranks takes at width w.
func stripLines(n, w int) int {
	per := max(1, w-len(stripPrefix))
	return (n + per - 1) / per
}

// strip is one cell per rank, in rank order, its height the rank's step
// time without comm between the fastest and the slowest rank.
func (m Model) strip(all, byWork []rank, w int) []string {
	lo, hi := byWork[0].work, byWork[len(byWork)-1].work
	per := max(1, w-len(stripPrefix))
	var out []string
	for start := 0; start < len(all); start += per {
		// Cells of one style are rendered together: a style's Render is
		// dear, and a strip of 64 ranks is a few runs.
		var b strings.Builder
		run, runStyle := []rune{}, -1 // the cells not yet rendered and their style (0 good, 1 bad, 2 none)
		flush := func() {
			switch runStyle {
			case 0:
				b.WriteString(m.St.Good.Render(string(run)))
			case 1:
				b.WriteString(m.St.Bad.Render(string(run)))
			case 2:
				b.WriteString(string(run))
			}
			run = run[:0]
		}
		for _, x := range all[start:min(len(all), start+per)] {
			cell, style := ' ', 2
			if x.ok {
				level := 0
				if hi > lo {
					level = int(math.Round((x.work - lo) / (hi - lo) * float64(len(heat)-1)))
				}
				cell, style = heat[level], 0
				if level >= len(heat)-2 {
					style = 1
				}
			}
			if style != runStyle {
				flush()
				runStyle = style
			}
			run = append(run, cell)
		}
		flush()
		prefix := strings.Repeat(" ", len(stripPrefix))
		if start == 0 {
			prefix = m.St.Label.Render(stripPrefix)
		}
		out = append(out, prefix+b.String())
	}
	return out
}

// maxHostW caps the host column.
const maxHostW = 16

// hostWidth is the width of the host column: the longest host name, up to
// maxHostW, when the ranks run on more than one host; else 0 (no column).
func hostWidth(all []rank) int {
	w, hosts := 0, map[string]bool{}
	for _, x := range all {
		hosts[x.r.Host] = true
		w = max(w, len(x.r.Host))
	}
	if len(hosts) < 2 {
		return 0
	}
	return min(w, maxHostW)
}

// digits is the width of the largest rank number.
func digits(all []rank) int {
	most := 0
	for _, x := range all {
		most = max(most, x.r.Rank)
	}
	return len(strconv.Itoa(most))
}
