package screen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/term"
)

// RedrawMsg asks for the whole screen to be painted again, for a terminal
// whose contents something else spoiled.
type RedrawMsg struct{}

// Redraw is the command that sends RedrawMsg.
func Redraw() tea.Msg { return RedrawMsg{} }

// Terminal is the terminal a program runs on: keys and mouse reports come
// from In, frames go to Out.
type Terminal struct {
	In, Out *os.File
	Profile colorprofile.Profile
	Title   string // the window's title
}

// Run runs model full screen on t until the model quits or ctx ends.
// Bubble Tea reads the keys and runs the model; after each update the
// model's View is drawn on a Screen, which writes only the cells that
// changed. The terminal is in raw mode while it runs and restored after.
func Run(ctx context.Context, model tea.Model, t Terminal) error {
	if !term.IsTerminal(t.In.Fd()) || !term.IsTerminal(t.Out.Fd()) {
		return errors.New("the full screen needs a terminal on standard input and output (use --once or --json for plain output)")
	}
	w, h, err := term.GetSize(t.Out.Fd())
	if err != nil {
		return fmt.Errorf("screen: the terminal's size: %w", err)
	}
	old, err := term.MakeRaw(t.In.Fd())
	if err != nil {
		return fmt.Errorf("screen: raw mode: %w", err)
	}
	defer func() { _ = term.Restore(t.In.Fd(), old) }()
	s := New(newWriter(t.Out), os.Environ(), t.Profile, w, h)
	if err := s.Open(t.Title); err != nil {
		return err
	}
	d := &drawn{inner: model, scr: s}
	p := tea.NewProgram(d, tea.WithContext(ctx), tea.WithoutRenderer(), tea.WithInput(t.In),
		tea.WithOutput(io.Discard), tea.WithWindowSize(w, h), tea.WithColorProfile(t.Profile), tea.WithFPS(1))
	stop := watchSize(p, t.Out)
	_, err = p.Run()
	stop()
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.err
	}
	return err
}

// watchSize sends p the terminal's new size after each SIGWINCH; the
// returned func stops it.
func watchSize(p *tea.Program, out *os.File) func() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGWINCH)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-sig:
				if w, h, err := term.GetSize(out.Fd()); err == nil {
					p.Send(tea.WindowSizeMsg{Width: w, Height: h})
				}
			}
		}
	}()
	return func() {
		signal.Stop(sig)
		close(done)
	}
}

// drawn runs a model and draws its View on a Screen after each update.
type drawn struct {
	inner tea.Model
	scr   *Screen
	err   error // the first failed write to the terminal
}

// Init starts the model.
func (d *drawn) Init() tea.Cmd { return d.inner.Init() }

// Update passes msg to the model and draws what it shows now.
func (d *drawn) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		d.scr.Resize(msg.Width, msg.Height)
	case RedrawMsg:
		d.scr.Redraw()
	}
	var cmd tea.Cmd
	d.inner, cmd = d.inner.Update(msg)
	if err := d.scr.Draw(d.inner.View().Content); err != nil {
		d.err = err
		return d, tea.Quit
	}
	return d, cmd
}

// View is empty: Bubble Tea draws nothing, the Screen does.
func (d *drawn) View() tea.View { return tea.View{} }
