// Package hotcode shows which code the time goes to, from the trainer's
// stack samples: for one group (the training thread in one stage, or the
// DataLoader workers) its hot path, from the user's own function down to
// the innermost call that still holds half the time, and the functions
// with the most self time. The pane follows the verdict's stage (the
// workers when the verdict is about the input and workers load it; the
// Python thread that holds the GIL when the verdict is gil-bound); its
// key c shows the next group.
package hotcode

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/tui/components/pane"
	"github.com/pipetop/pipetop/tui/draw"
	"github.com/pipetop/pipetop/tui/styles"
)

// KeyMap is the pane's keys.
type KeyMap struct {
	// Next shows the next group of samples.
	Next key.Binding
}

// DefaultKeys are the pane's default keys.
var DefaultKeys = KeyMap{Next: key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "hot code: next stage / workers"))}

// Model is the hot code pane.
type Model struct {
	pane.Base
	// pick is the group shown: 0 follows the verdict, i > 0 the (i-1)th
	// group of the profile.
	pick int
	keys KeyMap
}

// New returns a hot code pane drawn with st, with keys.
func New(st *styles.Styles, keys KeyMap) Model {
	return Model{Base: pane.Base{Box: pane.Box{St: st}}, keys: keys}
}

// Hidden reports whether s has nothing for the pane: no stack samples.
func Hidden(s *snapshot.Snapshot) bool { return s == nil || s.Code == nil || len(s.Code.Groups) == 0 }

// Title is the pane title.
func (m Model) Title() string {
	g := m.shown()
	if g == nil {
		return "hot code"
	}
	mode := "follows the verdict"
	if m.pick > 0 {
		mode = fmt.Sprintf("%d of %d", m.pick, len(m.Snap.Code.Groups))
	}
	title := fmt.Sprintf("hot code · %s · %s samples · %s", g.name, units.Count(g.samples), mode)
	if d := m.Snap.Code.Dropped; d > 0 {
		title += fmt.Sprintf(" · %s dropped", units.Count(d))
	}
	return title
}

// Keys lists the pane's key for the help.
func (m *Model) Keys() []key.Binding { return []key.Binding{m.keys.Next} }

// HandleKey shows the next group on its key.
func (m *Model) HandleKey(k tea.KeyPressMsg) (bool, tea.Cmd) {
	if !key.Matches(k, m.keys.Next) || Hidden(m.Snap) {
		return false, nil
	}
	m.pick = (m.pick + 1) % (len(m.Snap.Code.Groups) + 1)
	return true, nil
}

// Size returns the fewest and the preferred number of body lines.
func (m Model) Size(w int) (lo, pref int) { return 1, len(m.lines(w)) }

// View renders the body.
func (m Model) View() string { return draw.Block(strings.Join(m.lines(m.W), "\n"), m.W, m.H) }

// shown is what the pane draws: one group's samples or one thread's.
type shown struct {
	name    string
	samples int64
	hot     *stage.HotSpot
	path    []stage.PathStep
	top     []stage.FuncShare
}

// shown is what the pane shows now, nil without samples.
func (m Model) shown() *shown {
	if Hidden(m.Snap) {
		return nil
	}
	p := m.Snap.Code
	if m.pick > 0 && m.pick <= len(p.Groups) {
		return groupShown(&p.Groups[m.pick-1])
	}
	if th := gilThread(m.Snap); th != nil {
		return &shown{name: fmt.Sprintf("thread %q (tid %d), holds the GIL %s of a core", th.Name, th.TID, units.Pct(th.GIL())),
			samples: th.Samples, hot: th.Hot, path: th.Path}
	}
	return groupShown(Follow(m.Snap))
}

// groupShown is what the pane draws of group g.
func groupShown(g *stage.CodeGroup) *shown {
	return &shown{name: groupName(g), samples: g.Samples, hot: g.Hot, path: g.Path, top: g.Top}
}

// gilThread is the thread a gil-bound verdict is about: the Python thread
// that held the GIL the most; nil for another verdict.
func gilThread(s *snapshot.Snapshot) *stage.ThreadProfile {
	if s.Verdict == nil || s.Verdict.Kind != verdict.GILBound || s.Code == nil {
		return nil
	}
	var best *stage.ThreadProfile
	for i := range s.Code.Threads {
		if th := &s.Code.Threads[i]; th.Samples > 0 && (best == nil || th.GIL() > best.GIL()) {
			best = th
		}
	}
	return best
}

// Follow is the group the verdict is about: the workers for an input
// verdict when workers load the batches, the training thread in the
// verdict's stage, else the group with the most samples.
func Follow(s *snapshot.Snapshot) *stage.CodeGroup {
	p := s.Code
	if v := s.Verdict; v != nil && v.Stage != "" {
		if v.Stage == stage.DataWait && s.Loader != nil && s.Loader.Workers > 0 {
			if g := p.Group(stage.RoleWorker, ""); g != nil {
				return g
			}
		}
		if g := p.Group(stage.RoleTrain, v.Stage); g != nil {
			return g
		}
	}
	best := &p.Groups[0]
	for i := range p.Groups {
		if p.Groups[i].SampledNs > best.SampledNs {
			best = &p.Groups[i]
		}
	}
	return best
}

// groupName names a group: "2 workers" or "training thread in data_wait".
func groupName(g *stage.CodeGroup) string {
	if g.Role == stage.RoleWorker && g.Workers > 0 {
		return fmt.Sprintf("%d %s", g.Workers, g.Who())
	}
	return g.Who()
}

func (m Model) lines(w int) []string {
	g := m.shown()
	if g == nil {
		return nil
	}
	st := m.St
	var out []string
	if g.hot != nil {
		for _, l := range draw.Wrap(verdict.Phrase(g.hot), w) {
			out = append(out, st.Warn.Render(l))
		}
	}
	for i, s := range hotPath(g.path) {
		out = append(out, m.pathLine(s, i, w))
	}
	if len(g.top) > 0 {
		items := []string{st.Label.Render("self:")}
		for _, f := range g.top[:min(5, len(g.top))] {
			items = append(items, st.Value.Render(units.Pct(f.Self))+" "+libName(f.Lib, f.Name))
		}
		out = append(out, draw.Flow(items, " ", w)...)
	}
	return out
}

// hotPath is the part of a hot path worth showing: from the outermost of
// the user's own calls down (all of it when none is the user's).
func hotPath(path []stage.PathStep) []stage.PathStep {
	for i, s := range path {
		if s.User() {
			return path[i:]
		}
	}
	return path
}

// pathLine is one call of the hot path, indented by its depth i.
func (m Model) pathLine(s stage.PathStep, i, w int) string {
	st := m.St
	indent := strings.Repeat(" ", min(i, 12))
	name := libName(s.Lib, s.Name)
	if s.User() {
		name = st.Value.Render(name)
	}
	where := st.Dim.Render(fmt.Sprintf("%s:%d", s.File, s.Line))
	return draw.Fit(fmt.Sprintf("%s %s%s  %s", st.Load(100*s.Share).Render(fmt.Sprintf("%5s", units.Pct(s.Share))), indent, name, where), w)
}

// libName is a function with its library: "zarr Array.__getitem__".
func libName(lib, name string) string {
	if lib == "" {
		return name
	}
	return lib + " " + name
}
