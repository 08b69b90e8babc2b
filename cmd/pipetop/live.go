package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/charmbracelet/x/term"

	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/runner"
	"github.com/pipetop/pipetop/monitor/source"
	"github.com/pipetop/pipetop/monitor/sources"
	"github.com/pipetop/pipetop/tui"
	"github.com/pipetop/pipetop/tui/view"
)

// liveView is the full-screen monitor of a command pipetop runs (run,
// bisect, tune) with the settings file's settings, and its refresh
// interval; none with noTUI.
func liveView(noTUI, noGPU bool, stderr io.Writer) (runner.Show, time.Duration, error) {
	if noTUI {
		return nil, 0, nil
	}
	c, err := parse([]string{"attach", "-", fmt.Sprintf("--no-gpu=%v", noGPU)}, stderr)
	if err != nil {
		return nil, 0, err
	}
	show := func(ctx context.Context, m *monitor.Monitor) error {
		err := view.On(ctx, c.Config, m)
		if errors.Is(err, tui.ErrInterrupted) {
			return runner.ErrInterrupted
		}
		return err
	}
	return show, c.Interval, nil
}

// watcher is what pipetop bisect and tune do with each phase or trial:
// the live view on a terminal (none with noTUI), and the recording the
// caller asks for.
func watcher(noTUI, noGPU bool, stderr io.Writer) (*runner.Watcher, error) {
	show, refresh, err := liveView(noTUI, noGPU, stderr)
	w := runner.NewWatcher(show, terminal(), stderr)
	w.Refresh, w.Sources = refresh, sourcesFor(noGPU)
	return w, err
}

// terminal is whether pipetop's stdin and stdout are a terminal.
func terminal() bool { return term.IsTerminal(os.Stdin.Fd()) && term.IsTerminal(os.Stdout.Fd()) }

// exitInterrupted is pipetop bisect's and tune's exit status when Ctrl-C
// stopped them.
const exitInterrupted = 130

// experimentStatus is the outcome of a bisect or tune whose result was
// printed with err: exitInterrupted when Ctrl-C stopped it, else failed
// (the bisect's bisect.Report.FailureStatus) when it is not 0.
func experimentStatus(err error, interrupted bool, failed int) error {
	switch {
	case err != nil:
		return err
	case interrupted:
		return exitStatus(exitInterrupted)
	case failed != 0:
		return exitStatus(failed)
	}
	return nil
}

// needsCommand is a usage error when argv, the command of pipetop cmd
// (run, bisect, tune), is empty.
func needsCommand(cmd string, argv []string) error {
	if len(argv) == 0 {
		return usageError(fmt.Errorf("%s needs a command: pipetop %s -- python3 train.py", cmd, cmd))
	}
	return nil
}

// checkName is a usage error for a --name no socket can carry.
func checkName(name string) error {
	if strings.ContainsAny(name, "/\x00\n") {
		return usageError(fmt.Errorf("--name %q: no slashes or control characters", name))
	}
	return nil
}

// sourcesFor opens the registered sources (NVML's unless noGPU).
func sourcesFor(noGPU bool) func() []source.Source {
	return func() []source.Source { return sources.Registered(noGPU) }
}
