package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/pipetop/pipetop/tui/draw"
)

// pane is what the layout needs from a titled component.
type pane interface {
	Title() string
	Size(w int) (lo, pref int)
	SetSize(w, h int)
	// View is the body in exactly the w×h cells of the last SetSize:
	// h lines, each cut or padded to w cells (draw.Block).
	View() string
}

// collapser is a pane that can shrink to one title line (Line), giving its
// band to its neighbours: the GPU pane without GPUs.
type collapser interface {
	Collapsed() bool
	Line() string
}

// focusAware is a pane that draws differently when focused (the process
// table's selected row).
type focusAware interface{ SetFocused(f bool) }

// keyed is a pane with keys of its own. The root offers it the keys it
// does not use itself, the focused pane first, and lists its Keys in the
// help.
type keyed interface {
	Keys() []key.Binding
	// HandleKey acts on k and reports whether k was the pane's.
	HandleKey(k tea.KeyPressMsg) (bool, tea.Cmd)
}

// capturer is a keyed pane that takes every key while it asks for input
// (a filter prompt, a confirmation).
type capturer interface{ Capturing() bool }

// clicker is a pane that selects what a click lands on: body line i of the
// pane (0 is the first line under its title).
type clicker interface{ Click(i int) }

// scroller is a pane whose body can scroll when focused.
type scroller interface{ Scroll(d int) }

// grower is a pane that can use more body lines than it prefers (taller
// graphs) when the screen has rows to spare.
type grower interface{ MaxSize(w int) int }

// paneSizes is a pane's fewest, preferred and most body lines at width w.
func paneSizes(p pane, w int) (lo, pref, most int) {
	lo, pref = p.Size(w)
	most = pref
	if g, ok := p.(grower); ok {
		most = max(pref, g.MaxSize(w))
	}
	return lo, pref, most
}

// region is one horizontal band of the screen: a pane, or two side by
// side. Heights include the panes' title rules.
type region struct {
	// line, when set, is the whole band: one title rule (a collapsed pane).
	line           string
	left, right    pane
	lo, pref, most int
	got            int
}

// side reports whether the screen is wide enough for two panes per band.
func side(w int) bool { return w >= 100 }

func (r *region) measure(w int) {
	if r.line != "" {
		r.lo, r.pref, r.most = 1, 1, 1
		return
	}
	if r.right == nil || !side(w) {
		if r.right != nil { // stacked: the band holds both
			llo, lpref, lmost := paneSizes(r.left, w)
			rlo, rpref, rmost := paneSizes(r.right, w)
			r.lo, r.pref = titled(llo)+titled(rlo), titled(lpref)+titled(rpref)
			r.most = max(r.pref, titled(lmost)+titled(rmost))
			return
		}
		lo, pref, most := paneSizes(r.left, w)
		r.lo, r.pref, r.most = titled(lo), titled(pref), titled(most)
		return
	}
	wl, wr := halves(w)
	llo, lpref, lmost := paneSizes(r.left, wl)
	rlo, rpref, rmost := paneSizes(r.right, wr)
	r.lo, r.pref, r.most = titled(max(llo, rlo)), titled(max(lpref, rpref)), titled(max(lmost, rmost))
}

// titled adds the title rule to a body height; an empty body hides the pane.
func titled(body int) int {
	if body <= 0 {
		return 0
	}
	return body + 1
}

func halves(w int) (int, int) {
	l := (w - 1) / 2
	return l, w - 1 - l
}

// allocate hands out h lines: first each band's minimum in minOrder (a
// band that does not fit gets nothing), then up to each preferred height in
// prefOrder, then what is left up to each shown band's most in growOrder.
// h < 0 gives every band its preferred height.
func allocate(h int, bands []*region, minOrder, prefOrder, growOrder []int) {
	for _, b := range bands {
		b.got = 0
	}
	if h < 0 {
		for _, b := range bands {
			b.got = b.pref
		}
		return
	}
	left := h
	for _, i := range minOrder {
		if b := bands[i]; b.lo > 0 && b.lo <= left {
			b.got = b.lo
			left -= b.lo
		}
	}
	for _, i := range prefOrder {
		b := bands[i]
		if b.got == 0 && b.lo > left {
			continue
		}
		more := min(b.pref-b.got, left)
		if more > 0 {
			b.got += more
			left -= more
		}
	}
	for _, i := range growOrder {
		b := bands[i]
		if more := min(b.most-b.got, left); b.got > 0 && more > 0 {
			b.got += more
			left -= more
		}
	}
}

// render draws a band into exactly b.got lines of width w; focused names
// the pane whose title is highlighted.
func (m *Model) renderBand(b *region, w, y int, focused pane) string {
	if b.got <= 0 {
		return ""
	}
	if b.line != "" {
		return draw.Rule(b.line, w, m.st.Warn, m.st.Rule)
	}
	if b.right == nil {
		m.hit(b.left, 0, w, y, b.got)
		return m.renderPane(b.left, w, b.got, focused)
	}
	if side(w) {
		wl, wr := halves(w)
		m.hit(b.left, 0, wl, y, b.got)
		m.hit(b.right, wl+1, wr, y, b.got)
		return draw.SideBySide(m.renderPane(b.left, wl, b.got, focused), m.renderPane(b.right, wr, b.got, focused), wl, wr, b.got)
	}
	// Stacked: split the band between the two panes by their needs; a band
	// grown past its preferred height grows the left pane.
	llo, lpref := b.left.Size(w)
	_, rpref := b.right.Size(w)
	hl := min(titled(lpref), b.got)
	if b.got > b.pref {
		hl = b.got - titled(rpref)
	}
	if rest := b.got - hl; rest < titled(min(1, rpref)) {
		hl = max(titled(llo), b.got-titled(min(1, rpref)))
		hl = min(hl, b.got)
	}
	m.hit(b.left, 0, w, y, hl)
	m.hit(b.right, 0, w, y+hl, b.got-hl)
	parts := []string{m.renderPane(b.left, w, hl, focused)}
	if b.got-hl > 0 {
		parts = append(parts, m.renderPane(b.right, w, b.got-hl, focused))
	}
	return strings.Join(nonEmpty(parts), "\n")
}

// area is where a pane was drawn, title rule included, for the mouse.
type area struct {
	p          pane
	x, y, w, h int
}

// hit records that p was drawn at x, y in w×h cells.
func (m *Model) hit(p pane, x, w, y, h int) {
	if h > 0 {
		m.areas = append(m.areas, area{p, x, y, w, h})
	}
}

// paneAt is the pane drawn at x, y and the line of it there (0: its
// title); nil when none.
func (m *Model) paneAt(x, y int) (pane, int) {
	for _, a := range m.areas {
		if x >= a.x && x < a.x+a.w && y >= a.y && y < a.y+a.h {
			return a.p, y - a.y
		}
	}
	return nil, 0
}

// renderPane draws a title rule and the body in h lines.
func (m *Model) renderPane(p pane, w, h int, focused pane) string {
	if h <= 0 {
		return ""
	}
	style := m.st.Title
	if p == focused {
		style = m.st.Focused
	}
	title := draw.Rule(p.Title(), w, style, m.st.Rule)
	if h == 1 {
		return title
	}
	p.SetSize(w, h-1)
	return title + "\n" + p.View()
}

func nonEmpty(parts []string) []string {
	out := parts[:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}
