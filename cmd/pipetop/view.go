package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/term"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/remote"
	"github.com/pipetop/pipetop/monitor/runner"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/sources"
	"github.com/pipetop/pipetop/tui"
	"github.com/pipetop/pipetop/tui/screen"
	"github.com/pipetop/pipetop/tui/styles"
)

// severalTrainers is the error of a command that needs one trainer when
// several are live; cmd is how to name one (attach or export).
func severalTrainers(cmd string) error {
	eps, _ := ipc.List()
	return fmt.Errorf("%d live trainers: choose one with pipetop %s NAME (see pipetop ls)", len(eps), cmd)
}

// open opens the monitor the command line asks for: a run read from a
// Prometheus server, or local sockets with o.
func open(ctx context.Context, c config, o monitor.Options) (*monitor.Monitor, error) {
	if c.prometheus == "" {
		return monitor.Open(ctx, c.spec, o)
	}
	for _, src := range o.Sources { // a remote view reads no local source
		src.Close()
	}
	client, err := remote.NewClient(c.prometheus)
	if err != nil {
		return nil, usageError{err}
	}
	v, err := remote.Open(ctx, client, c.spec, c.rank)
	if err != nil {
		return nil, notAttached{err}
	}
	return monitor.OpenRemote(v), nil
}

// aggregates is whether to ask trainers for agg frames instead of steps:
// $PIPETOP_AGGREGATES=1 always, 0 never, else when fallback says (the
// full-screen monitor does; one-shot snapshots do not).
func aggregates(fallback bool) bool {
	switch os.Getenv("PIPETOP_AGGREGATES") {
	case "1":
		return true
	case "0":
		return false
	}
	return fallback
}

// snapshotOnce implements --once and --json.
func snapshotOnce(ctx context.Context, c config, stdout io.Writer) error {
	agg := aggregates(false)
	m, err := open(ctx, c, monitor.Options{Sources: sources.Registered(c.noGPU), NoWatch: true, Aggregates: agg, Backfill: true})
	if err != nil {
		return err
	}
	defer m.Close()
	if m.Pick {
		return severalTrainers("attach")
	}
	w := monitor.Windows[c.window]
	m.AwaitLink(ctx, c.interval)
	m.Snapshot(time.Now(), w) // first reading: rates need two
	// A long --interval reads once a second meanwhile, so the histories
	// the memory rules judge hold more than two points.
	// With agg frames the steps since the trainer began the current
	// aggregate arrive with the next one: collect one aggregate longer.
	collect := c.interval
	if agg {
		collect += ipc.AggregateEvery
	}
	end := time.Now().Add(collect)
	for left := collect; left > 0; left = time.Until(end) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(left, time.Second)):
		}
		if time.Until(end) > 0 {
			m.Snapshot(time.Now(), w)
		}
	}
	m.StopWatching() // this pipetop exits: no next try to announce
	s := m.Snapshot(time.Now(), w)
	if c.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(s)
	} else {
		err = printText(stdout, &s, c)
	}
	if err != nil {
		return err
	}
	if s.Remote != nil {
		return remoteOutcome(s)
	}
	return attachOutcome(m, s.Link)
}

// remoteOutcome is notAttached when a remote view could not read its run.
func remoteOutcome(s snapshot.Snapshot) error {
	if l := s.Link; l.State == snapshot.LinkFailed || l.State == snapshot.LinkNone {
		return notAttached{fmt.Errorf("could not read run %s from %s: %s", s.Remote.Run, s.Remote.URL, l.Detail)}
	}
	return nil
}

// attachOutcome is notAttached when the monitor watched for a trainer and
// never got a hello from it.
func attachOutcome(m *monitor.Monitor, l snapshot.Link) error {
	if !m.Attached() || l.State == snapshot.LinkConnected || l.State == snapshot.LinkDisconnected {
		return nil
	}
	if l.Detail == "" {
		l.Detail = "no hello from " + l.Socket
	}
	return notAttached{fmt.Errorf("could not attach the trainer: %s", l.Detail)}
}

// printText writes the --once text: colour only on a colour terminal.
func printText(stdout io.Writer, s *snapshot.Snapshot, c config) error {
	out := stdout
	color := false
	width := c.width
	if f, ok := stdout.(*os.File); ok {
		p := colorprofile.Detect(f, os.Environ())
		color = p >= colorprofile.ANSI
		if color {
			out = &colorprofile.Writer{Forward: f, Profile: p}
		}
		if w, _, err := term.GetSize(f.Fd()); err == nil && width == 0 {
			width = w
		}
	}
	if width == 0 {
		width = 100
	}
	m := tui.New(tui.Options{Styles: styles.NewTheme(color, c.theme), Hidden: c.hidden, Sort: c.sort})
	m.SetSnapshot(s)
	for _, line := range strings.Split(m.Render(width, -1), "\n") {
		if _, err := fmt.Fprintln(out, strings.TrimRight(line, " ")); err != nil {
			return fmt.Errorf("write snapshot: %w", err)
		}
	}
	return nil
}

// batchFor is how long a screen redrawn every interval lets the trainer
// gather frames: one interval, at most a second. A fast trainer then wakes
// the viewer once per redraw instead of on every frame, and a redraw shows
// steps at most two intervals old.
func batchFor(interval time.Duration) time.Duration {
	return min(interval, time.Second)
}

// fullScreen runs root on the terminal until it quits or ctx ends (not an
// error). Each update draws only the cells that changed, with no frame
// ticker: a monitor that wakes only for a refresh or a key.
func fullScreen(ctx context.Context, root tea.Model, prof colorprofile.Profile) error {
	err := screen.Run(ctx, root, screen.Terminal{In: os.Stdin, Out: os.Stdout, Profile: prof, Title: "pipetop"})
	if err != nil && ctx.Err() != nil {
		return nil
	}
	return err
}

// oneThread runs the monitor's goroutines on one thread unless GOMAXPROCS
// says otherwise. A refresh is a chain of steps that wait for each other
// (read, summarize, draw); a second thread only added wake-ups, each of
// which costs as much as a small redraw on a virtual machine.
func oneThread() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
}

// showView is the view: --once and --json print a snapshot, else the
// full-screen monitor runs (Ctrl-C closes it, as q does).
func showView(ctx context.Context, c config, stdout, _ io.Writer) error {
	if c.once || c.json {
		return snapshotOnce(ctx, c, stdout)
	}
	return closed(interactive(ctx, c))
}

// closed is err of a full screen that only the user closed: nil after a
// Ctrl-C, which the monitor takes as a key (its terminal is in raw mode).
func closed(err error) error {
	if errors.Is(err, tea.ErrInterrupted) {
		return nil
	}
	return err
}

// interactive runs the full-screen monitor.
func interactive(ctx context.Context, c config) error {
	oneThread()
	m, err := open(ctx, c, monitor.Options{Sources: sources.Registered(c.noGPU), Batch: batchFor(c.interval), Gated: true,
		Aggregates: aggregates(true), Backfill: true, BriefRanks: true})
	if err != nil {
		return err
	}
	defer m.Close()
	return showScreen(ctx, c, m)
}

// showScreen runs the full-screen monitor on m with c's settings.
func showScreen(ctx context.Context, c config, m *monitor.Monitor) error {
	p := colorprofile.Detect(os.Stdout, os.Environ())
	o := tui.Options{Snapshotter: m.Snapshotter, Styles: styles.NewTheme(p >= colorprofile.ANSI, c.theme),
		Interval: c.interval, Window: c.window, Pick: m.Pick, Context: ctx, ReadOnly: c.readOnly,
		Hidden: c.hidden, Sort: c.sort, Keys: c.keys}
	if v, ok := m.Snapshotter.Remote.(*remote.View); ok {
		o.ChooseRank = v.SetRank
	}
	return fullScreen(ctx, tui.New(o), p)
}

// liveView is the full-screen monitor of a command pipetop runs (run,
// bisect, tune) with the settings file's settings, and its refresh
// interval.
func liveView(noGPU bool, stderr io.Writer) (runner.Show, time.Duration, error) {
	args := []string{"attach", "-"}
	if noGPU {
		args = append(args, "--no-gpu")
	}
	c, err := parse(args, stderr)
	if err != nil {
		return nil, 0, err
	}
	show := func(ctx context.Context, m *monitor.Monitor) error {
		oneThread()
		if err := showScreen(ctx, c, m); errors.Is(err, tea.ErrInterrupted) {
			return runner.ErrInterrupted
		} else {
			return err
		}
	}
	return show, c.interval, nil
}
