// Package flame draws the flame bar: the mean iteration over the selected
// window as one horizontal bar split by stage in fixed colours, a second
// bar with the GPU busy time per stage and the GPU idle time (when the
// trainer publishes GPU times), and a legend with each stage's mean and
// share of the step.
package flame

import (
	"fmt"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
	"github.com/pipetop/pipetop/tui/components/pane"
	"github.com/pipetop/pipetop/tui/draw"
	"github.com/pipetop/pipetop/tui/styles"
)

// Model is the flame bar pane.
type Model struct{ pane.Base }

// New returns a flame pane drawn with st.
func New(st *styles.Styles) Model { return Model{pane.New(st)} }

// Title is the pane title: window, steps and the mean step time.
func (m Model) Title() string {
	if m.Snap == nil || m.Snap.Summary == nil {
		return "iteration"
	}
	s := m.Snap.Summary
	return fmt.Sprintf("iteration · %s window · %s steps · mean %s · p99 %s",
		m.Snap.Window.Label, units.Count(int64(s.Steps)), units.Dur(s.WallMean), units.Dur(s.WallP99))
}

// Size returns the fewest and the preferred number of body lines.
func (m Model) Size(w int) (lo, pref int) {
	lo = 1
	if m.Snap != nil && m.Snap.Summary != nil && m.Snap.Summary.HasGPU {
		lo = 2
	}
	return lo, len(m.Lines(w, m.lines))
}

// View renders the body.
func (m Model) View() string { return draw.Block(strings.Join(m.Lines(m.W, m.lines), "\n"), m.W, m.H) }

func (m Model) lines(w int) []string {
	if m.Snap == nil || w <= 0 {
		return nil
	}
	s := m.Snap.Summary
	if s == nil || s.WallMean <= 0 {
		msg := "no trainer attached"
		if m.Snap.Trainer != nil {
			msg = "waiting for steps"
		}
		return []string{m.St.Dim.Render(msg)}
	}
	prefix, bw := "", w
	if w >= 30 {
		prefix, bw = "CPU ", w-4
	}
	out := []string{m.St.Label.Render(prefix) + m.cpuBar(s, bw)}
	if s.HasGPU {
		p := ""
		if prefix != "" {
			p = "GPU "
		}
		out = append(out, m.St.Label.Render(p)+m.gpuBar(s, bw))
	}
	return append(out, m.legend(s, w)...)
}

// segment is one piece of a bar.
type segment struct {
	name  string // stage name, "" for GPU idle
	ns    float64
	label string
}

func (m Model) cpuBar(s *stage.Summary, w int) string {
	segs := make([]segment, 0, len(s.Stages))
	for _, st := range s.Stages {
		segs = append(segs, segment{name: st.Name, ns: st.Mean,
			label: fmt.Sprintf("%s %s %s", st.Name, units.Dur(st.Mean), units.Pct(st.Share))})
	}
	return m.bar(segs, s.WallMean, w)
}

func (m Model) gpuBar(s *stage.Summary, w int) string {
	var segs []segment
	var busy float64
	for _, st := range s.Stages {
		if !st.HasGPU || st.GPUMean <= 0 {
			continue
		}
		busy += st.GPUMean
		segs = append(segs, segment{name: st.Name, ns: st.GPUMean, label: fmt.Sprintf("%s %s", st.Name, units.Dur(st.GPUMean))})
	}
	if idle := s.WallMean - busy; idle > 0 {
		segs = append(segs, segment{ns: idle, label: fmt.Sprintf("GPU idle %s %s", units.Dur(idle), units.Pct(idle/s.WallMean))})
	}
	return m.bar(segs, max(s.WallMean, busy), w)
}

// bar lays segments out over w cells in proportion to total, by largest
// remainder so that the cells add up to exactly w.
func (m Model) bar(segs []segment, total float64, w int) string {
	if w <= 0 || total <= 0 {
		return ""
	}
	cells := widths(segs, total, w)
	var b strings.Builder
	for i, sg := range segs {
		if cells[i] == 0 {
			continue
		}
		style := m.St.Segment(sg.name)
		if sg.name == "" {
			style = m.St.Idle()
		}
		text := fitLabel(sg.label, cells[i], m.St.Color)
		b.WriteString(style.Render(text))
	}
	return b.String()
}

func widths(segs []segment, total float64, w int) []int {
	ns := make([]float64, len(segs))
	for i, sg := range segs {
		ns[i] = sg.ns
	}
	return draw.Split(ns, total, w)
}

// fitLabel writes as much of the label as fits in n cells after a leading
// cell: the whole label, its first word (the stage name), a cut name, or
// nothing. Without colour the leading cell is '|' and the rest is filled
// with '·' so that stages stay apart; with colour it is a space.
func fitLabel(label string, n int, color bool) string {
	if n <= 0 {
		return ""
	}
	lead, fill := " ", " "
	if !color {
		lead, fill = "|", "·"
	}
	room := n - 1
	name, _, _ := strings.Cut(label, " ")
	text := ""
	switch {
	case draw.Width(label) < room:
		text = label
	case draw.Width(name) < room:
		text = name
	case room >= 2:
		text = draw.Fit(name, room)
	}
	return lead + text + strings.Repeat(fill, room-draw.Width(text))
}

// legend lists every stage with a colour swatch, mean, share and GPU mean.
func (m Model) legend(s *stage.Summary, w int) []string {
	var items []string
	for _, st := range s.Stages {
		item := m.St.Swatch(st.Name).Render("■") + " " + m.St.Label.Render(st.Name) + " " +
			m.St.Value.Render(units.Dur(st.Mean)) + " " + m.St.Dim.Render(units.Pct(st.Share))
		if st.HasGPU && st.GPUMean > 0 {
			item += m.St.Dim.Render(" gpu " + units.Dur(st.GPUMean))
		}
		items = append(items, item)
	}
	if s.HasGPU {
		items = append(items, m.St.Label.Render("GPU busy ")+m.St.Value.Render(units.Pct(s.GPUBusy))+m.St.Dim.Render(" (CUDA events)"))
	}
	return draw.Flow(items, "  ", w)
}
