// Package runner runs the commands pipetop watches: pipetop run's command,
// and each phase and trial of pipetop bisect and tune (Watcher). A
// command's trainer gets one monitor in the process, opened once it
// publishes (watch.go) and shared by everything that watches it: the live
// view on the terminal, the recording and pipetop run's keeper of what the
// end-of-run summary needs each subscribe to its refreshes; the command's
// output is held while the view owns the terminal. The command runs in a
// process group of its own (monitor/child); Run prints the end-of-run
// summary when it ends (monitor/summary).
package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	pypublish "github.com/pipetop/pipetop/clients/python"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/child"
	"github.com/pipetop/pipetop/monitor/source"
	"github.com/pipetop/pipetop/monitor/summary"
	"github.com/pipetop/pipetop/monitor/tune"
)

// Show runs the live view of m on the terminal until ctx ends or the user
// closes it (the screen refreshes m while it runs); ErrInterrupted when
// the user typed Ctrl-C, which the view takes as a key.
type Show func(ctx context.Context, m *monitor.Monitor) error

// ErrInterrupted is a Show's error for a Ctrl-C typed in the view.
var ErrInterrupted = errors.New("interrupted")

// SettleGrace is how long what a command left running gets for each of
// SIGINT and SIGTERM once pipetop was asked to stop.
const SettleGrace = 5 * time.Second

// Config is pipetop run's: the command, how it is watched, and where its
// output and end-of-run summary go.
type Config struct {
	// Argv is the command; Env its environment (Env gives the
	// instrumentation's).
	Argv, Env []string
	// Terminal: pipetop's stdin and stdout are a terminal, which the
	// command shares (child.Options.Terminal).
	Terminal bool
	// Show is the live view, shown on the Terminal; nil: none.
	Show Show
	// Refresh is the live view's refresh interval (the trainer holds its
	// frames up to a refresh, at most a second).
	Refresh time.Duration
	// Record is the recording file (every rank, and the host readings of
	// each refresh); "" records nothing.
	Record string
	// Apply is a tune report or plan whose settings the command runs
	// with; "" for none.
	Apply string
	// Sources opens the host sources the monitor samples.
	Sources func() []source.Source
	// JSON prints the end-of-run summary as JSON on Stdout (the command's
	// stdout then goes to Stderr); SummaryDir is where the command writes
	// its summaries ("": $PIPETOP_SUMMARY_DIR, else the working directory
	// both share).
	JSON       bool
	SummaryDir string
	Stdin      io.Reader
	Stdout     io.Writer
	Stderr     io.Writer
}

// Run runs c's command, watched, and prints the summary of its run when
// it ends; status is the command's exit status (128+N when signal N
// killed it). It returns once every process the command started has
// exited: what it leaves running is waited for, or, after a Ctrl-C,
// stopped (child.Process.Settle).
func Run(ctx context.Context, c Config) (status int, err error) {
	say := func(format string, args ...any) { fmt.Fprintf(c.Stderr, "pipetop: "+format+"\n", args...) }
	env, planOut, err := applyPlan(c.Env, c.Apply)
	if err != nil {
		return 0, err
	}
	if planOut != "" {
		defer os.RemoveAll(filepath.Dir(planOut))
	}
	cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	live := c.Terminal && c.Show != nil
	out := child.NewHeld(c.Stdout)
	switch {
	case live:
		// The view owns the screen while it is open: the command's
		// output waits and is printed when it closes.
		cmd.Stdout, cmd.Stderr = out, out
	case c.JSON:
		cmd.Stdout = c.Stderr // stdout carries the summary only
	}
	start := time.Now()
	if err := child.Adopt(); err != nil {
		say("%v (what the command leaves running when it exits is not stopped)", err)
	}
	p, err := child.Start(cmd, child.Options{Terminal: c.Terminal})
	if err != nil {
		return 0, fmt.Errorf("run %s: %w", c.Argv[0], err)
	}
	defer p.Close()
	w := watchChild(ctx, p, c, live)
	if live {
		w.showUntilExit(ctx, p, c.Show, out, say)
	}
	status, waitErr := p.Wait()
	p.Settle(SettleGrace, say)
	kept, recErr := w.stop()
	if recErr != nil {
		say("%v", recErr)
	}
	if waitErr != nil {
		return 0, fmt.Errorf("run %s: %w", c.Argv[0], waitErr)
	}
	if err := summary.EndOfRun(summaryDir(c.SummaryDir), start, kept, c.JSON, c.Stdout, c.Stderr); err != nil {
		say("%v", err)
	}
	if planOut != "" {
		say("--apply %s: %s", c.Apply, tune.DescribeOutcome(tune.ReadPlanReports(planOut)))
	}
	return status, nil
}

// summaryDir is where the command writes its summaries: dir, else
// $PIPETOP_SUMMARY_DIR, else the working directory both share.
func summaryDir(dir string) string {
	if dir == "" {
		dir = os.Getenv("PIPETOP_SUMMARY_DIR")
	}
	if dir == "" {
		dir, _ = os.Getwd()
	}
	return cmp.Or(dir, ".")
}

// Env is the environment of a command run with pipetop's automatic
// instrumentation: the embedded publisher unpacked and on PYTHONPATH
// behind a sitecustomize bootstrap, the run summary left for pipetop to
// print, the trainer's name (none: the script's) and the settings set.
func Env(name string, set ...string) ([]string, error) {
	root, err := pypublish.CacheRoot()
	if err != nil {
		return nil, err
	}
	dir, err := pypublish.Unpack(root)
	if err != nil {
		return nil, err
	}
	// PIPETOP_STACKS_READER: this pipetop reads the trainer's stacks from
	// outside (package stacks); the trainer samples its own only if told.
	set = append([]string{"PIPETOP_SUMMARY=file", fmt.Sprintf("PIPETOP_STACKS_READER=%d", os.Getpid())}, set...)
	if name != "" {
		set = append(set, "PIPETOP_NAME="+name)
	}
	return pypublish.Env(os.Environ(), dir, set...)
}

// applyPlan is env with the plan of the tune report or plan file path,
// written to a directory of its own where the script reports what it
// applied (planOut); env as it is for no path.
func applyPlan(env []string, path string) (out []string, planOut string, err error) {
	if path == "" {
		return env, "", nil
	}
	plan, err := tune.PlanOf(path)
	if err != nil {
		return nil, "", fmt.Errorf("--apply: %w", err)
	}
	tmp, err := os.MkdirTemp("", "pipetop-apply-")
	if err != nil {
		return nil, "", fmt.Errorf("--apply: %w", err)
	}
	penv, planOut, err := tune.WritePlan(plan, tmp, "plan.json")
	if err != nil {
		os.RemoveAll(tmp)
		return nil, "", fmt.Errorf("--apply: %w", err)
	}
	return append(env, penv...), planOut, nil
}
