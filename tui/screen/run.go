package screen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

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

// endGrace is how long a screen whose context ended has to read the
// end's mark (input.end) before it is killed.
const endGrace = 2 * time.Second

// Run runs model full screen on t until the model quits or ctx ends
// (tea.ErrInterrupted after a Ctrl-C, even one typed as ctx ended).
// pipetop reads the keys (input), Bubble Tea parses them and runs the
// model; after each update the model's View is drawn on a Screen, which
// writes only the cells that changed. The terminal is in raw mode while it
// runs and restored after.
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
	in, err := openInput(t.In)
	if err != nil {
		_ = s.Close()
		return err
	}
	d := &drawn{inner: model, scr: s, in: in}
	// No context for Bubble Tea: when ctx ends, input marks the end after
	// the last key it passed on, and the screen quits at the mark.
	p := tea.NewProgram(d, tea.WithoutRenderer(), tea.WithInput(in.pr),
		tea.WithOutput(io.Discard), tea.WithWindowSize(w, h), tea.WithColorProfile(t.Profile), tea.WithFPS(1))
	stop := watchSize(p, t.Out)
	ran := endOn(ctx, in, p)
	_, err = p.Run()
	close(ran)
	stop()
	if in.close() {
		err = tea.ErrInterrupted // typed as the screen ended: the caller acts on it as on any Ctrl-C
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.err
	}
	return err
}

// endOn marks the end of p's input when ctx ends, and kills p if it has
// not read the mark within endGrace; closing the returned channel says p
// is done.
func endOn(ctx context.Context, in *input, p *tea.Program) chan<- struct{} {
	ran := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			in.end()
		case <-ran:
			return
		}
		select {
		case <-ran:
		case <-time.After(endGrace):
			p.Kill()
		}
	}()
	return ran
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
	in    *input
	err   error // the first failed write to the terminal
}

// Init starts the model.
func (d *drawn) Init() tea.Cmd { return d.inner.Init() }

// Update passes msg to the model and draws what it shows now.
func (d *drawn) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.FocusMsg:
		if d.in.ended.Load() { // the end's mark: every key before it was handled
			return d, tea.Quit
		}
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
