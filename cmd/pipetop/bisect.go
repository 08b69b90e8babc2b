package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/pipetop/pipetop/internal/cli"
	"github.com/pipetop/pipetop/monitor/bisect"
	"github.com/pipetop/pipetop/monitor/runner"
)

// bisectConfig is the command line of pipetop bisect.
type bisectConfig struct {
	bisect.Config
	seconds              float64
	phases, record, name string
	noTUI, asJSON, noGPU bool
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

// check takes the command, argv, and checks the command line.
func (c *bisectConfig) check(argv []string) error {
	c.Argv, c.PhaseTime, c.Phases = argv, time.Duration(c.seconds*float64(time.Second)), cli.List(c.phases)
	if err := needsCommand("bisect", argv); err != nil {
		return err
	}
	switch {
	case c.seconds <= 0:
		return usageError(fmt.Errorf("--seconds-per-phase %g: want a positive number", c.seconds))
	case c.CacheMB <= 0:
		return usageError(fmt.Errorf("--cache-mb %g: want a positive number", c.CacheMB))
	}
	if err := checkName(c.name); err != nil {
		return err
	}
	for _, p := range c.Phases {
		if !slices.Contains(bisect.Known, p) {
			return usageError(fmt.Errorf("--phases: unknown phase %q (want %s)", p, strings.Join(bisect.Known, ", ")))
		}
	}
	return nil
}

// runBisect runs the bisect c describes and prints its result.
func runBisect(ctx context.Context, c bisectConfig, stdout, stderr io.Writer) error {
	w, err := watcher(c.noTUI, c.noGPU, stderr)
	if err != nil {
		return err
	}
	w.RecordDir = c.record
	rep, err := runner.Bisect(ctx, c.Config, c.name, w)
	switch {
	case err != nil:
		return err
	case c.asJSON:
		err = writeJSON(stdout, rep)
	default:
		rep.WriteTable(stdout)
	}
	return experimentStatus(err, rep.Interrupted, rep.FailureStatus())
}

// declare declares the flags of pipetop bisect on fs.
func (c *bisectConfig) declare(fs *flag.FlagSet) {
	fs.Float64Var(&c.seconds, "seconds-per-phase", 20, "measured `seconds` of each phase, after its warm-up")
	fs.StringVar(&c.phases, "phases", strings.Join(bisect.Phases, ","), "the phases to run, in order (a comma-separated `list`)")
	fs.Int64Var(&c.WarmupSteps, "warmup", 5, "steps after the first that each phase does not measure")
	fs.Float64Var(&c.CacheMB, "cache-mb", 1024, "memory cap of the cached batches, in `MB` (at most 64 batches)")
	fs.DurationVar(&c.Grace, "grace", 5*time.Second, "how long a stopped phase has after SIGINT, and after SIGTERM")
	fs.DurationVar(&c.StartTimeout, "start-timeout", 2*time.Minute, "how long a phase may take to its first training step")
	fs.BoolVar(&c.noTUI, "no-tui", false, "do not show the phases live; only print the result")
	fs.BoolVar(&c.asJSON, "json", false, "print the result as JSON (docs/bisect.md) instead of the table")
	fs.BoolVar(&c.noGPU, "no-gpu", false, "do not load NVML")
	fs.BoolVar(&c.DropCaches, "drop-caches", false, "before the cold phase, drop the whole page cache (root), not only the files the loader read")
	fs.StringVar(&c.record, "record", "", "keep each phase's recording (`DIR`/PHASE.pipetop) and the result (DIR/bisect.json)")
	fs.StringVar(&c.name, "name", "", "trainer name (default: the script's name)")
}
