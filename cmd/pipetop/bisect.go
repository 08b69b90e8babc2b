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
	"syscall"
	"time"

	"github.com/pipetop/pipetop/monitor/bisect"
	"github.com/pipetop/pipetop/monitor/runner"
	"github.com/pipetop/pipetop/monitor/source"
	"github.com/pipetop/pipetop/monitor/sources"
)

// exitPhaseFailed is pipetop bisect's exit status when a phase failed.
const exitPhaseFailed = 3

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
Each phase warms up (--warmup steps, or 10 s for slow steps), is measured
for --seconds-per-phase, then stopped as a whole process group (SIGINT, then
SIGTERM and SIGKILL after --grace). The table (phase, batch, it/s,
samples/s, stage shares, GPU busy, threads waiting for a CPU), each phase's
own verdict and the verdict that compares them are printed at the end
(--json: docs/bisect.md). The script's side effects (checkpoints, logs)
happen once per phase. With a terminal, the monitor shows each phase live
(q closes it; the bisect goes on; Ctrl-C stops the bisect and prints what
ran). Exit status 3 when a phase failed.`

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
		if !slices.Contains(bisect.Phases, p) {
			return usageError{fmt.Errorf("--phases: unknown phase %q (want %s)", p, strings.Join(bisect.Phases, ", "))}
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
	env, err := runner.Env(c.name)
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
	w, err := watcher(c.noTUI, c.noGPU, stderr)
	if err != nil {
		return err
	}
	w.RecordDir = c.record
	cfg := bisect.Config{Argv: c.argv, Env: env, Phases: c.phaseList(), PhaseTime: time.Duration(c.seconds * float64(time.Second)),
		WarmupSteps: c.warmup, StartTimeout: c.startLimit, Grace: c.grace, CacheMB: c.cacheMB, Dir: dir,
		Sources: w.Sources, Stdout: w.Out, Stderr: w.Out, Log: w.Out, Watch: w.Watch}
	rep, err := bisect.Run(ctx, cfg)
	w.Out.Release()
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
		return exitStatus(exitPhaseFailed)
	}
	return nil
}

// watcher is what pipetop bisect and tune do with each phase or trial:
// the live view on a terminal (none with --no-tui), the recording.
func watcher(noTUI, noGPU bool, stderr io.Writer) (*runner.Watcher, error) {
	var show runner.Show
	var refresh time.Duration
	if !noTUI {
		var err error
		if show, refresh, err = liveView(noGPU, stderr); err != nil {
			return nil, err
		}
	}
	w := runner.NewWatcher(show, terminal(), stderr)
	w.Refresh, w.Sources = refresh, func() []source.Source { return sources.Registered(noGPU) }
	return w, nil
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
