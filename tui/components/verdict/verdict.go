// Package verdict shows the run's verdict (metrics/verdict's Judge) in
// plain words: the headline with the numbers behind it, then one suggested
// next step, then the run's other costs it does not name ("also: ...").
package verdict

import (
	"strings"

	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/tui/components/pane"
	"github.com/pipetop/pipetop/tui/draw"
	"github.com/pipetop/pipetop/tui/styles"
)

// Model is the verdict pane.
type Model struct{ pane.Base }

// New returns a verdict pane drawn with st.
func New(st *styles.Styles) Model { return Model{pane.New(st)} }

// Size returns the fewest and the preferred number of lines at width w.
func (m Model) Size(w int) (lo, pref int) { return 1, max(1, len(m.Lines(w, m.lines))) }

// View renders the verdict.
func (m Model) View() string {
	return draw.Block(strings.Join(m.Lines(m.W, m.lines), "\n"), m.W, m.H)
}

func (m Model) lines(w int) []string {
	if m.Snap == nil || w <= 0 {
		return nil
	}
	v := m.Snap.Verdict
	if v == nil {
		msg := "verdict: no steps yet"
		if m.Snap.Trainer == nil {
			msg = "verdict: attach a trainer to see where each step's time goes"
		}
		return []string{m.St.Dim.Render(msg)}
	}
	head := "▶ " + v.Headline
	if l := m.Snap.Link.State; l == snapshot.LinkDisconnected || l == snapshot.LinkFailed {
		head = "▶ (last known) " + v.Headline
	}
	style := m.severityStyle(v.Severity())
	var out []string
	for _, l := range draw.Wrap(head, w) {
		out = append(out, style.Render(l))
	}
	out = append(out, m.labelled("next:", v.Next, w)...)
	if len(v.Also) > 0 {
		out = append(out, m.labelled("also:", verdict.AlsoText(v.Also), w)...)
	}
	return out
}

// labelled is text wrapped at width w after its label.
func (m Model) labelled(label, text string, w int) []string {
	var out []string
	for i, l := range draw.Wrap(label+" "+text, w) {
		if i == 0 {
			l = m.St.Label.Render(label) + m.St.Value.Render(strings.TrimPrefix(l, label))
		} else {
			l = m.St.Value.Render(l)
		}
		out = append(out, l)
	}
	return out
}

// severityStyle is the headline's style for a verdict of severity sv.
func (m Model) severityStyle(sv verdict.Severity) styles.Style {
	switch sv {
	case verdict.SeverityGood:
		return m.St.GoodBold
	case verdict.SeverityWarn:
		return m.St.Warn
	}
	return m.St.Bad
}
