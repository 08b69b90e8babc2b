// Package header is pipetop's top pane: which trainer, whether the link is
// up, and the headline numbers (step, it/s, samples/s, loss, uptime, epoch
// ETA), with the socket or the reason for a lost or failed link on a second
// line. A trainer that could not be attached is named in place of "monitor
// only".
package header

import (
	"cmp"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/pipetop/pipetop/metrics/units"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/tui/components/pane"
	"github.com/pipetop/pipetop/tui/draw"
	"github.com/pipetop/pipetop/tui/styles"
)

// Model is the header pane.
type Model struct {
	pane.Base
	paused   bool
	interval time.Duration
}

// New returns a header drawn with st.
func New(st *styles.Styles) Model { return Model{Base: pane.New(st)} }

// SetPaused marks the display as paused.
func (m *Model) SetPaused(p bool) { m.paused = p }

// SetInterval sets the refresh interval shown.
func (m *Model) SetInterval(d time.Duration) { m.interval = d }

// Size returns the fewest and the preferred number of lines: two, and the
// reason a trainer could not be attached on up to three more.
func (m Model) Size(w int) (lo, pref int) { return 1, 2 + len(m.failure(w)) }

// maxFailureLines bounds the lines a failure's detail takes.
const maxFailureLines = 3

// failure is the detail of a failed link wrapped to w cells, nil unless
// the link failed.
func (m Model) failure(w int) []string {
	if m.Snap == nil || m.Snap.Link.State != snapshot.LinkFailed {
		return nil
	}
	lines := draw.Wrap(m.Snap.Link.Detail, w)
	return lines[:min(len(lines), maxFailureLines)]
}

// View renders the header.
func (m Model) View() string {
	if m.Snap == nil || m.H <= 0 {
		return ""
	}
	lines := []string{m.first()}
	fail := m.failure(m.W)
	own := len(fail) > 0 && m.H >= 2+len(fail) // the failure gets its own lines
	if m.H > 1 {
		lines = append(lines, m.second(!own))
	}
	if own {
		for _, l := range fail {
			lines = append(lines, m.St.Bad.Render(l))
		}
	}
	return draw.Block(strings.Join(lines, "\n"), m.W, m.H)
}

// sep separates the header's fields, in the labels' colour: a label next
// to a separator is one run of colour, and the line a trainer's progress
// redraws every refresh takes five fewer colour changes.
func (m Model) sep() string { return m.St.Label.Render(" │ ") }

func (m Model) first() string {
	s, st := m.Snap, m.St
	narrow := m.W < 60
	var parts []string
	if !narrow {
		parts = append(parts, st.Title.Render("pipetop"))
	}
	switch {
	case s.Trainer == nil && s.Link.State == snapshot.LinkFailed:
		parts = append(parts, st.Bad.Render("✗ cannot attach "+filepath.Base(s.Link.Socket)))
	case s.Trainer == nil && s.Link.State == snapshot.LinkNone && s.Link.Socket != "":
		parts = append(parts, st.Warn.Render("○ connecting to "+filepath.Base(s.Link.Socket)))
	case s.Trainer == nil:
		parts = append(parts, st.Dim.Render("monitor only: no trainer attached"))
	case narrow:
		parts = append(parts, st.Value.Render(s.Trainer.Name)+" "+m.link())
	default:
		t := s.Trainer
		parts = append(parts, st.Value.Render(t.Name)+st.Dim.Render(fmt.Sprintf(" pid %d", t.PID))+" "+m.link())
		if t.Phase != "" {
			parts = append(parts, st.Label.Render("phase ")+st.Warn.Render(t.Phase))
		}
	}
	if sum := s.Summary; sum != nil {
		parts = append(parts,
			st.Label.Render("step ")+st.Value.Render(units.Count(sum.LastStep)),
			st.Value.Render(units.Rate(sum.StepsPerSec))+st.Label.Render(" it/s"),
			st.Value.Render(units.Rate(sum.SamplesPerSec))+st.Label.Render(" samples/s"))
		if sum.HasLoss {
			parts = append(parts, st.Label.Render("loss ")+st.Value.Render(fmt.Sprintf("%.4g", sum.LastLoss)))
		}
	}
	if t := s.Trainer; t != nil {
		if t.UptimeSec > 0 {
			parts = append(parts, st.Label.Render("up ")+st.Value.Render(units.Age(time.Duration(t.UptimeSec*float64(time.Second)))))
		}
		if t.EpochETASec > 0 {
			parts = append(parts, st.Label.Render("epoch ETA ")+st.Value.Render(units.Age(time.Duration(t.EpochETASec*float64(time.Second)))))
		}
	}
	return strings.Join(parts, m.sep())
}

func (m Model) link() string {
	s, st := m.Snap, m.St
	if r := s.Replay; r != nil {
		return st.Warn.Render(fmt.Sprintf("▶ replay %s / %s", units.Clock(seconds(r.AtSec)), units.Clock(seconds(r.LengthSec))))
	}
	switch s.Link.State {
	case snapshot.LinkConnected:
		return st.Good.Render("● live")
	case snapshot.LinkDisconnected:
		ago := units.Age(s.Time.Sub(s.Link.Since))
		return st.Bad.Render("○ disconnected " + ago + " ago")
	case snapshot.LinkFailed:
		return st.Bad.Render("✗ cannot attach")
	}
	return st.Warn.Render("○ connecting")
}

// second is the window, refresh and link line; failure says whether a
// failed link's detail goes on it.
func (m Model) second(failure bool) string {
	s, st := m.Snap, m.St
	var parts []string
	if m.paused {
		parts = append(parts, st.Warn.Render("⏸ paused (p to resume)"))
	}
	if r := s.Replay; r != nil {
		if r.View != "" { // a one-off snapshot: nothing to seek
			parts = append(parts, st.Label.Render("recording ")+st.Value.Render(r.File), st.Label.Render("showing ")+st.Value.Render(r.View))
		} else {
			parts = append(parts, st.Label.Render("recording ")+st.Value.Render(r.File)+st.Dim.Render(fmt.Sprintf(" at %gx (←/→ seek, [ ] speed)", r.Speed)))
		}
		if r.Damage != "" {
			parts = append(parts, st.Bad.Render("damaged: ")+st.Dim.Render(r.Damage))
		}
	}
	if t := s.Trainer; t != nil && t.Synthetic {
		parts = append(parts, st.Warn.Render("SYNTHETIC publisher: made-up steps"))
	}
	parts = append(parts, st.Label.Render("window ")+st.Value.Render(s.Window.Label))
	if m.interval > 0 {
		parts = append(parts, st.Label.Render("refresh ")+st.Value.Render(m.interval.String()))
	}
	if r := s.Remote; r != nil {
		parts = append(parts, st.Label.Render("prometheus ")+st.Value.Render(r.URL)+
			st.Dim.Render(fmt.Sprintf(" · rank %d on %s · rates over %gs", r.Rank, cmp.Or(r.Host, r.Instance, "?"), r.RangeSec)))
	}
	switch {
	case s.Link.State == snapshot.LinkFailed:
		if failure {
			parts = append(parts, st.Bad.Render(s.Link.Detail))
		} else if s.Trainer != nil {
			parts = append(parts, st.Bad.Render("last state kept"))
		}
	case s.Link.State == snapshot.LinkDisconnected:
		parts = append(parts, st.Bad.Render("last state kept")+st.Dim.Render(": "+s.Link.Detail))
	case s.Link.State == snapshot.LinkNone && s.Link.Detail != "":
		parts = append(parts, st.Dim.Render(s.Link.Detail))
	case s.Trainer != nil:
		if s.Trainer.Dropped > 0 {
			parts = append(parts, st.Warn.Render(fmt.Sprintf("%s frames dropped (viewer too slow)", units.Count(s.Trainer.Dropped))))
		}
		if e := s.Trainer.LastEvent; e != nil {
			parts = append(parts, st.Label.Render(e.Kind+" ")+st.Dim.Render(e.Msg))
		}
		if s.Remote == nil {
			parts = append(parts, st.Dim.Render(s.Trainer.Socket))
		}
	}
	return strings.Join(parts, m.sep())
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
