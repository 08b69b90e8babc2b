package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/term"

	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/bisect"
	"github.com/pipetop/pipetop/monitor/child"
	"github.com/pipetop/pipetop/monitor/source"
	"github.com/pipetop/pipetop/monitor/sources"
)

// exitInterrupted is its exit status when Ctrl-C stopped it.
const exitInterrupted = 130

// bisectLong is what pipetop bisect -h says it does.
const bisectLong = `Runs CMD (an unmodified PyTorch script) once per phase, each phase
selected for the automatic instrumentation through its environment, and
compares them:
  loader   the training DataLoader alone (its dataset, sampler, collate,
           workers and batch size), no network
  cached   the loop on its first batches (up to 64, --cache-mb) replayed
           from memory, upload included, epochs of the real length
  forward  cached batches with backward and the optimizer step skipped
  full     the script as it is
  cold     (when asked) the loader alone once more, the files the loader
           phase read evicted from the page cache first (--drop-caches:
           the whole cache, as root): storage-bound or not
Each phase warms up (--warmup steps, or 10 s for slow steps), is measured
for --seconds-per-phase, then stopped as a whole process group (SIGINT, then
SIGTERM and SIGKILL after --grace). The table (phase, batch, it/s,
samples/s, stage shares, GPU busy, threads waiting for a CPU), each phase's
own verdict and the verdict that compares them are printed at the end
(--json: docs/bisect.md). The script's side effects (checkpoints, logs)
happen once per phase. With a terminal, the monitor shows each phase live
(q closes it; the bisect goes on; Ctrl-C stops the bisect and prints what
ran). A phase that fails before a step is measured, as the phase before
did or before anything instrumented connected, stops the bisect: every
phase would fail; its exit status is the script's. Exit status 3 when a
phase failed otherwise.`

// bisectConfig is the command line of pipetop bisect.
type bisectConfig struct {
	seconds    float64
	phases     string
	warmup     int64
	cacheMB    float64
	grace      time.Duration
	startLimit time.Duration
	noTUI      bool
	asJSON     bool
	noGPU      bool
	dropCaches bool
	record     string
	name       string
	argv       []string
}

// bisectFlags is pipetop bisect.
func bisectFlags(fs *flag.FlagSet) runFunc {
	var c bisectConfig
	c.declare(fs)
	return func(ctx context.Context, argv []string, stdout, stderr io.Writer) error {
		if err := c.check(argv); err != nil {
			return err
		}
		return runBisect(ctx, c, stdout, stderr)
	}
}

// declare declares the flags of pipetop bisect on fs.
func (c *bisectConfig) declare(fs *flag.FlagSet) {
	fs.Float64Var(&c.seconds, "seconds-per-phase", 20, "measured `seconds` of each phase, after its warm-up")
	fs.StringVar(&c.phases, "phases", strings.Join(bisect.Phases, ","), "the phases to run, in order (a comma-separated `list`)")
	fs.Int64Var(&c.warmup, "warmup", 5, "steps after the first that each phase does not measure")
	fs.Float64Var(&c.cacheMB, "cache-mb", 1024, "memory cap of the cached batches, in `MB` (at most 64 batches)")
	fs.DurationVar(&c.grace, "grace", 5*time.Second, "how long a stopped phase has after SIGINT, and after SIGTERM")
	fs.DurationVar(&c.startLimit, "start-timeout", 2*time.Minute, "how long a phase may take to its first training step")
	fs.BoolVar(&c.noTUI, "no-tui", false, "do not show the phases live; only print the result")
	fs.BoolVar(&c.asJSON, "json", false, "print the result as JSON (docs/bisect.md) instead of the table")
	fs.BoolVar(&c.noGPU, "no-gpu", false, "do not load NVML")
	fs.BoolVar(&c.dropCaches, "drop-caches", false, "before the cold phase, drop the whole page cache (root), not only the files the loader read")
	fs.StringVar(&c.record, "record", "", "keep each phase's recording (`DIR`/PHASE.pipetop) and the result (DIR/bisect.json)")
	fs.StringVar(&c.name, "name", "", "trainer name (default: the script's name)")
}

// check takes the command, argv, and checks the command line.
func (c *bisectConfig) check(argv []string) error {
	c.argv = argv
	switch {
	case len(argv) == 0:
		return usageError{errors.New("bisect needs a command: pipetop bisect -- python3 train.py")}
	case c.seconds <= 0:
		return usageError{fmt.Errorf("--seconds-per-phase %g: want a positive number", c.seconds)}
	case c.cacheMB <= 0:
		return usageError{fmt.Errorf("--cache-mb %g: want a positive number", c.cacheMB)}
	case strings.ContainsAny(c.name, "/\x00\n"):
		return usageError{fmt.Errorf("--name %q: no slashes or control characters", c.name)}
	}
	for _, p := range c.phaseList() {
		if !slices.Contains(bisect.Known, p) {
			return usageError{fmt.Errorf("--phases: unknown phase %q (want %s)", p, strings.Join(bisect.Known, ", "))}
		}
	}
	return nil
}

// phaseList is --phases as a list.
func (c *bisectConfig) phaseList() []string {
	var out []string
	for _, p := range strings.Split(c.phases, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// runBisect runs the bisect c describes and prints its result.
func runBisect(ctx context.Context, c bisectConfig, stdout, stderr io.Writer) error {
	env, _, err := runEnv(runConfig{name: c.name})
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "pipetop-bisect-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if c.record != "" {
		if err := os.MkdirAll(c.record, 0o755); err != nil {
			return fmt.Errorf("--record: %w", err)
		}
	}
	// A closed terminal stops the bisect as Ctrl-C does: the running
	// phase's group is outside the terminal's and would not hear it.
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGHUP)
	defer stop()
	w := newWatcher(c, stderr)
	cfg := bisect.Config{Argv: c.argv, Env: env, Phases: c.phaseList(), PhaseTime: time.Duration(c.seconds * float64(time.Second)),
		WarmupSteps: c.warmup, StartTimeout: c.startLimit, Grace: c.grace, CacheMB: c.cacheMB, Dir: dir, DropCaches: c.dropCaches,
		Sources: func() []source.Source { return sources.Registered(c.noGPU) },
		Stdout:  w.out, Stderr: w.out, Log: w.out, Watch: w.watch}
	rep, err := bisect.Run(ctx, cfg)
	w.out.Release()
	if err != nil {
		return err
	}
	if err := writeBisect(rep, c, stdout); err != nil {
		return err
	}
	switch {
	case rep.Interrupted:
		return exitStatus(exitInterrupted)
	case rep.Failed():
		return exitStatus(rep.FailureStatus())
	}
	return nil
}

// writeBisect prints the result (and keeps it in the --record directory).
func writeBisect(rep bisect.Report, c bisectConfig, stdout io.Writer) error {
	if c.record != "" {
		if err := writeJSON(filepath.Join(c.record, bisect.ReportFile), rep); err != nil {
			return fmt.Errorf("--record: %w", err)
		}
	}
	if c.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	rep.WriteTable(stdout)
	return nil
}

// watcher is what pipetop bisect does with each phase while it runs: the
// live view on a terminal, the recording with --record. The command's
// output (and the progress) wait while the screen is up.
type watcher struct {
	c      bisectConfig
	stderr io.Writer
	out    *child.Held
	live   atomic.Bool // the live view is wanted (q turns it off)
}

func newWatcher(c bisectConfig, stderr io.Writer) *watcher {
	w := &watcher{c: c, stderr: stderr, out: child.NewHeld(stderr)}
	tty := term.IsTerminal(os.Stdin.Fd()) && term.IsTerminal(os.Stdout.Fd())
	w.live.Store(tty && !c.noTUI)
	return w
}

// watch records and shows one phase until ctx ends with it.
func (w *watcher) watch(ctx context.Context, phase, socket string) {
	done := make(chan struct{})
	if w.c.record != "" {
		go func() {
			defer close(done)
			if err := recordPhase(ctx, filepath.Join(w.c.record, phase+".pipetop"), socket, phase, w.c.noGPU); err != nil {
				fmt.Fprintln(w.out, "pipetop:", err)
			}
		}()
	} else {
		close(done)
	}
	if w.live.Load() {
		w.show(ctx, socket)
	}
	<-done
}

// show runs the monitor on the phase's trainer until ctx ends or the user
// closes it (then the later phases run without it; a Ctrl-C stops the
// bisect).
func (w *watcher) show(ctx context.Context, socket string) {
	args := []string{"attach", socket}
	if w.c.noGPU {
		args = append(args, "--no-gpu")
	}
	mc, err := parse(args, w.stderr)
	if err == nil {
		w.out.Hold()
		err = interactive(ctx, mc)
		w.out.Release()
	}
	if errors.Is(err, tea.ErrInterrupted) {
		w.live.Store(false)
		// Caught by the bisect's own handler, as a Ctrl-C without the
		// monitor is: the running phase's group is stopped.
		fmt.Fprintln(w.stderr, "pipetop: Ctrl-C: stopping the bisect")
		_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
		return
	}
	if err != nil {
		fmt.Fprintln(w.stderr, "pipetop: monitor:", err)
	}
	if ctx.Err() == nil {
		w.live.Store(false)
		fmt.Fprintln(w.stderr, "pipetop: monitor closed; the bisect goes on (Ctrl-C stops it)")
	}
}

// recordPhase records a phase's trainer (every rank) until ctx ends.
func recordPhase(ctx context.Context, path, socket, phase string, noGPU bool) error {
	m, err := monitor.Open(ctx, socket, monitor.Options{Sources: sources.Registered(noGPU)})
	if err != nil {
		return fmt.Errorf("record %s: %w", path, err)
	}
	rec, err := monitor.StartRecorder(ctx, m, monitor.RecordOptions{Path: path, Source: "pipetop bisect, phase " + phase, Interval: time.Second})
	if err != nil {
		return fmt.Errorf("record %s: %w", path, err)
	}
	if err := rec.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("record %s: %w", path, err)
	}
	return nil
}
