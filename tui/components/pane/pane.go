// Package pane holds the state pipetop's panes have in common, to be
// embedded by each component: the styles and size of its area (Box), the
// snapshot it shows (Base) and, for panes whose lines scroll, the first
// line shown (Scrolling).
package pane

import (
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/tui/styles"
)

// Box is an area drawn with St and W×H cells in size.
type Box struct {
	// St is the styles the area is drawn with.
	St *styles.Styles
	// W and H are the width and height in cells.
	W, H int
}

// SetSize sets the width and height in cells.
func (b *Box) SetSize(w, h int) { b.W, b.H = w, h }

// Base is a pane that shows a snapshot.
type Base struct {
	Box
	// Snap is what to show; nil before the first refresh.
	Snap *snapshot.Snapshot
	memo *linesMemo // shared by the copies value methods make; nil: no memo
}

// linesMemo is the body a pane last rendered, and for what.
type linesMemo struct {
	snap  *snapshot.Snapshot
	w     int
	lines []string
}

// New returns a Base drawn with st.
func New(st *styles.Styles) Base { return Base{Box: Box{St: st}, memo: &linesMemo{}} }

// Lines returns render(w), rendered once per snapshot and width: a pane
// that sizes itself by counting its lines and then draws them renders them
// once a refresh. render must depend only on the snapshot, the styles and
// w, and the caller must not change the lines returned.
func (b Base) Lines(w int, render func(w int) []string) []string {
	m := b.memo
	if m == nil {
		return render(w)
	}
	if m.lines == nil || m.snap != b.Snap || m.w != w {
		m.snap, m.w, m.lines = b.Snap, w, render(w)
	}
	return m.lines
}

// SetSnapshot sets what to show.
func (b *Base) SetSnapshot(s *snapshot.Snapshot) { b.Snap = s }

// Scrolling is a pane whose lines scroll by an offset kept in range.
type Scrolling struct {
	Base
	// Off is the requested number of lines scrolled past; Offset clamps it.
	Off int
}

// NewScrolling returns a Scrolling drawn with st.
func NewScrolling(st *styles.Styles) Scrolling { return Scrolling{Base: New(st)} }

// ScrollBy moves the offset by d lines, kept within [0, n-H] for a body
// of n lines.
func (s *Scrolling) ScrollBy(d, n int) { s.Off = clamp(s.Off+d, n, s.H) }

// Offset is the offset to draw a body of n lines with: the one requested,
// kept within [0, n-H].
func (s Scrolling) Offset(n int) int { return clamp(s.Off, n, s.H) }

func clamp(off, n, h int) int { return max(0, min(off, n-h)) }
