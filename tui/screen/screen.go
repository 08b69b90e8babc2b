// Package screen puts frames of styled text on a full-screen terminal.
//
// A frame is the whole screen as one string of lines with ANSI styles, as
// the TUI's root renders it. Bubble Tea's own renderer parses every line
// of every frame into cells and hashes every line to look for scrolled
// regions; a monitor's frame changes in a few numbers a second and never
// scrolls, and those two passes were half of what pipetop cost attached to
// a trainer. Screen compares each line's text with the line drawn before,
// parses only the lines that differ, and lets ultraviolet's terminal
// renderer write the cells that changed in them.
package screen

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/colorprofile"
	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"

	"github.com/pipetop/pipetop/tui/draw"
)

// Screen is the terminal's full screen as last drawn.
type Screen struct {
	out   *uv.TerminalRenderer
	buf   uv.ScreenBuffer
	lines []string // the text of each row as last drawn

	profile colorprofile.Profile // the terminal's colours, which every cell's style is converted to
	parser  *ansi.Parser         // reads the SGR sequences of plain lines
	cell    uv.Cell              // the cell being set, kept to set cells without allocating
}

// New returns a screen of w x h cells that writes to out, for a terminal
// with the environment env and the colour profile p.
func New(out io.Writer, env []string, p colorprofile.Profile, w, h int) *Screen {
	r := uv.NewTerminalRenderer(out, env)
	// The cells come converted to p (drawLine): the renderer, which
	// would convert both its pen and the cell's style for every cell it
	// writes, passes them through.
	r.SetColorProfile(colorprofile.TrueColor)
	r.SetScrollOptim(false)
	s := &Screen{out: r, buf: uv.NewScreenBuffer(w, h), profile: p}
	s.lines = make([]string, h)
	r.Resize(w, h)
	return s
}

// Open switches the terminal to its alternate screen, hides the cursor,
// turns on mouse button reports and names the window title.
func (s *Screen) Open(title string) error {
	s.out.EnterAltScreen()
	_, _ = s.out.WriteString(ansi.HideCursor + ansi.SetModeMouseButtonEvent + ansi.SetModeMouseExtSgr + ansi.SetWindowTitle(title))
	return s.flush()
}

// Close undoes Open: the mouse reports, the cursor and the main screen
// come back as they were.
func (s *Screen) Close() error {
	_, _ = s.out.WriteString(ansi.ResetModeMouseButtonEvent + ansi.ResetModeMouseExtSgr)
	s.out.ExitAltScreen()
	_, _ = s.out.WriteString(ansi.ShowCursor)
	return s.flush()
}

// Resize changes the screen's size; the next Draw repaints every row.
func (s *Screen) Resize(w, h int) {
	if w == s.buf.Width() && h == s.buf.Height() {
		return
	}
	s.buf.Resize(w, h)
	s.out.Resize(w, h)
	s.lines = make([]string, h)
	s.Redraw()
}

// Redraw forgets what the terminal shows: the next Draw clears it and
// paints every row.
func (s *Screen) Redraw() {
	s.out.Erase()
	for i := range s.lines {
		s.lines[i] = "\x00" // matches no row of text
	}
}

// Draw shows frame: rows past the frame's last line are blank, lines past
// the screen's last row are left out. Only the rows whose text differs
// from the last frame are parsed and compared cell by cell.
func (s *Screen) Draw(frame string) error {
	w := s.buf.Width()
	for y := range s.lines {
		line, rest, _ := strings.Cut(frame, "\n")
		frame = rest
		if line == s.lines[y] {
			continue
		}
		s.lines[y] = line
		s.drawLine(line, y, w)
	}
	s.out.Render(s.buf.RenderBuffer)
	return s.flush()
}

// drawLine puts line on row y, w cells wide, each cell's style converted
// to the terminal's colours. A line of SGR sequences and one-cell runes
// only (what pipetop's panes draw) is decoded here: each rune is a cell
// whose text is a slice of the line, and only the SGR sequences go through
// the ANSI parser, converted once each. Any other line takes
// ultraviolet's decoder, which segments graphemes and measures each one,
// and its cells are converted after; both give the same cells (tested).
func (s *Screen) drawLine(line string, y, w int) {
	if !draw.Plain(line) {
		uv.NewStyledString(line).Draw(s.buf, uv.Rect(0, y, w, 1))
		row := s.buf.Line(y)
		for x := range row {
			row[x].Style, row[x].Link = uv.ConvertStyle(row[x].Style, s.profile), uv.ConvertLink(row[x].Link, s.profile)
		}
		s.buf.TouchLine(0, y, w)
		return
	}
	if s.parser == nil {
		s.parser = ansi.NewParser()
	}
	var style, pen uv.Style // as the line sets it; converted
	x := 0
	for i := 0; i < len(line) && x < w; {
		if line[i] == ansi.ESC {
			_, _, n, _ := ansi.DecodeSequence(line[i:], ansi.NormalState, s.parser)
			uv.ReadStyle(s.parser.Params(), &style)
			pen = uv.ConvertStyle(style, s.profile)
			i += n
			continue
		}
		_, n := utf8.DecodeRuneInString(line[i:])
		s.cell = uv.Cell{Content: line[i : i+n], Width: 1, Style: pen}
		s.buf.SetCell(x, y, &s.cell)
		x++
		i += n
	}
	for ; x < w; x++ {
		s.buf.SetCell(x, y, nil)
	}
}

// flush writes what the renderer has queued.
func (s *Screen) flush() error {
	if err := s.out.Flush(); err != nil {
		return fmt.Errorf("screen: writing to the terminal: %w", err)
	}
	return nil
}
