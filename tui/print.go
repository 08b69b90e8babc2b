package tui

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/term"

	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/tui/styles"
)

// PrintOptions say how Print lays a snapshot out.
type PrintOptions struct {
	// Width is the text's width; 0: the terminal's, else 100.
	Width int
	// Theme, Hidden and Sort are as in Options (the settings file's).
	Theme  string
	Hidden []string
	Sort   string
}

// Print writes s as the screen would draw it, at its full height, as
// text (pipetop --once): colour only on a colour terminal.
func Print(w io.Writer, s *snapshot.Snapshot, o PrintOptions) error {
	out, color, width := w, false, o.Width
	if f, ok := w.(*os.File); ok {
		p := colorprofile.Detect(f, os.Environ())
		color = p >= colorprofile.ANSI
		if color {
			out = &colorprofile.Writer{Forward: f, Profile: p}
		}
		if tw, _, err := term.GetSize(f.Fd()); err == nil && width == 0 {
			width = tw
		}
	}
	if width == 0 {
		width = 100
	}
	m := New(Options{Styles: styles.NewTheme(color, o.Theme), Hidden: o.Hidden, Sort: o.Sort})
	m.SetSnapshot(s)
	for _, line := range strings.Split(m.Render(width, -1), "\n") {
		if _, err := fmt.Fprintln(out, strings.TrimRight(line, " ")); err != nil {
			return fmt.Errorf("write snapshot: %w", err)
		}
	}
	return nil
}
