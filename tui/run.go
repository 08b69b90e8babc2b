package tui

import (
	"context"
	"errors"
	"os"
	"runtime"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/pipetop/pipetop/tui/screen"
	"github.com/pipetop/pipetop/tui/styles"
)

// ErrInterrupted is Run's error after a Ctrl-C, which the screen takes as
// a key (its terminal is in raw mode): the caller passes it on as the
// terminal would have.
var ErrInterrupted = tea.ErrInterrupted

// Run runs the full-screen monitor with o on the terminal until the user
// quits or ctx ends (neither is an error; a Ctrl-C typed as ctx ended is
// ErrInterrupted still). Styles, when nil, are those of
// o.Theme in colour on a colour terminal. Each update draws only the cells
// that changed, with no frame ticker: a monitor that wakes only for a
// refresh or a key. The monitor's goroutines run on one thread unless
// GOMAXPROCS says otherwise: a refresh is a chain of steps that wait for
// each other (read, summarize, draw), and a second thread only added
// wake-ups, each of which costs as much as a small redraw on a virtual
// machine.
func Run(ctx context.Context, o Options) error {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	p := colorprofile.Detect(os.Stdout, os.Environ())
	if o.Styles == nil {
		o.Styles = styles.NewTheme(p >= colorprofile.ANSI, o.Theme)
	}
	err := screen.Run(ctx, New(o), screen.Terminal{In: os.Stdin, Out: os.Stdout, Profile: p, Title: "pipetop"})
	if err != nil && ctx.Err() != nil && !errors.Is(err, ErrInterrupted) {
		return nil
	}
	return err
}
