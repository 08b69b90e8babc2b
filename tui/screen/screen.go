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

	"github.com/charmbracelet/colorprofile"
	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
)

// Screen is the terminal's full screen as last drawn.
type Screen struct {
	out   *uv.TerminalRenderer
	buf   uv.ScreenBuffer
	lines []string // the text of each row as last drawn
}

// New returns a screen of w x h cells that writes to out, for a terminal
// with the environment env and the colour profile p.
func New(out io.Writer, env []string, p colorprofile.Profile, w, h int) *Screen {
	r := uv.NewTerminalRenderer(out, env)
	r.SetColorProfile(p)
	r.SetScrollOptim(false)
	s := &Screen{out: r, buf: uv.NewScreenBuffer(w, h)}
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
		uv.NewStyledString(line).Draw(s.buf, uv.Rect(0, y, w, 1))
	}
	s.out.Render(s.buf.RenderBuffer)
	return s.flush()
}

// flush writes what the renderer has queued.
func (s *Screen) flush() error {
	if err := s.out.Flush(); err != nil {
		return fmt.Errorf("screen: writing to the terminal: %w", err)
	}
	return nil
}
