// Package view shows the monitor a command line asks for: on the full
// screen (Show, On), or as one snapshot (--once text, --json), of the
// trainers of this machine or of a run read from a Prometheus server
// (monitor/remote). cmd/pipetop parses the flags into a Config.
package view

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/remote"
	"github.com/pipetop/pipetop/monitor/sources"
	"github.com/pipetop/pipetop/tui"
	"github.com/pipetop/pipetop/tui/settings"
)

// Config is what a command line asks the view to show, and how.
type Config struct {
	// Spec names the trainer or run ("" for the only live one).
	Spec string
	// Prometheus, when set, is the server the run is read from instead
	// of local sockets; Rank the rank shown (-1: the lowest).
	Prometheus string
	Rank       int
	// Interval is the refresh interval (and the collection time of a
	// snapshot); Window an index of monitor.Windows.
	Interval time.Duration
	Window   int
	// Once and JSON print one snapshot, as text of Width columns (0: the
	// terminal's) or as JSON.
	Once, JSON bool
	Width      int
	// NoGPU leaves NVML unloaded; ReadOnly refuses the process table's
	// signals.
	NoGPU, ReadOnly bool
	// Settings are the settings file's: the hidden panes, the process
	// table's sort, the theme and the keys.
	settings.Settings
}

// NotAttached is the error of a view that could not attach its trainer
// (or read its run from the server); pipetop exits with status 3.
type NotAttached struct{ error }

// Unwrap is why.
func (n NotAttached) Unwrap() error { return n.error }

// Show shows what c asks for: one snapshot printed to w with Once or
// JSON, else the full screen until the user closes it (a Ctrl-C, which
// the screen takes as a key, closes it too).
func Show(ctx context.Context, c Config, w io.Writer) error {
	if c.Once || c.JSON {
		return once(ctx, c, w)
	}
	m, err := open(ctx, c, monitor.ScreenOptions(sources.Registered(c.NoGPU), c.Interval))
	if err != nil {
		return err
	}
	defer m.Close()
	if err := On(ctx, c, m); !errors.Is(err, tui.ErrInterrupted) {
		return err
	}
	return nil
}

// On runs the full screen on m with c's settings until the user closes
// it (tui.ErrInterrupted after a Ctrl-C) or ctx ends.
func On(ctx context.Context, c Config, m *monitor.Monitor) error {
	o := tui.Options{Snapshotter: m.Snapshotter, Theme: c.Theme, Interval: c.Interval, Window: c.Window, Pick: m.Pick,
		Context: ctx, ReadOnly: c.ReadOnly, Hidden: c.Hidden, Sort: c.Sort, Keys: &c.Keys}
	if v, ok := m.Snapshotter.Remote.(*remote.View); ok {
		o.ChooseRank = v.SetRank
	}
	return tui.Run(ctx, o)
}

// once prints the snapshot of --once and --json; NotAttached when it
// shows no run.
func once(ctx context.Context, c Config, w io.Writer) error {
	m, err := open(ctx, c, monitor.OnceOptions(sources.Registered(c.NoGPU)))
	if err != nil {
		return err
	}
	defer m.Close()
	if m.Pick {
		return monitor.PickOne("attach")
	}
	s, err := m.Once(ctx, c.Interval, monitor.Windows[c.Window])
	if err != nil {
		return err
	}
	if c.JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		err = enc.Encode(s)
	} else {
		err = tui.Print(w, &s, tui.PrintOptions{Width: c.Width, Theme: c.Theme, Hidden: c.Hidden, Sort: c.Sort})
	}
	if err == nil {
		if err = m.Failed(s); err != nil {
			err = NotAttached{err}
		}
	}
	return err
}

// open opens the monitor c asks for: a run read from a Prometheus server
// (whose client c.Prometheus must make: the command line is checked), or
// local sockets with o.
func open(ctx context.Context, c Config, o monitor.Options) (*monitor.Monitor, error) {
	if c.Prometheus == "" {
		return monitor.Open(ctx, c.Spec, o)
	}
	for _, src := range o.Sources { // a remote view reads no local source
		src.Close()
	}
	client, err := remote.NewClient(c.Prometheus)
	if err != nil {
		return nil, err
	}
	v, err := remote.Open(ctx, client, c.Spec, c.Rank)
	if err != nil {
		return nil, NotAttached{err}
	}
	return monitor.OpenRemote(v), nil
}
