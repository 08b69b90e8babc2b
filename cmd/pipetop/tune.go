package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/pipetop/pipetop/monitor/runner"
	"github.com/pipetop/pipetop/monitor/tune"
	"github.com/pipetop/pipetop/monitor/tunefile"
)

// tuneConfig is the command line of pipetop tune.
type tuneConfig struct {
	tune.Config
	seconds, memoryMB    float64
	from, out            string
	noTUI, asJSON, noGPU bool
}

// tuneFlags is pipetop tune.
func tuneFlags(fs *flag.FlagSet) runFunc {
	var c tuneConfig
	fs.DurationVar(&c.Budget, "budget", 10*time.Minute, "the most the whole tune may take; the best so far is advised when it runs out")
	fs.Float64Var(&c.seconds, "seconds-per-trial", 10, "measured `seconds` of each phase and trial, after its warm-up")
	fs.IntVar(&c.Rounds, "rounds", 3, "full runs of each finalist and of the script's own settings, alternating")
	fs.StringVar(&c.from, "from", "", "start from this pipetop bisect --json `file` (or a tune report: its bisect and its search trials) instead of bisecting")
	fs.StringVar(&c.out, "o", tunefile.Name, "write the report (and the winner's plan, for pipetop run --apply) to this `file`")
	fs.Float64Var(&c.memoryMB, "memory-limit", 0, "the memory a trial may fill, in `MB` (default: the host's)")
	fs.DurationVar(&c.Bisect.StartTimeout, "start-timeout", 2*time.Minute, "how long a trial may take to its first training step")
	fs.BoolVar(&c.noTUI, "no-tui", false, "do not show the trials live; only print the result")
	fs.BoolVar(&c.asJSON, "json", false, "print the report as JSON (docs/tune.md) instead of the table")
	fs.BoolVar(&c.noGPU, "no-gpu", false, "do not load NVML")
	return func(ctx context.Context, argv []string, stdout, stderr io.Writer) error {
		if err := c.check(argv); err != nil {
			return err
		}
		return runTune(ctx, c, stdout, stderr)
	}
}

// check takes the command, argv, and checks the command line.
func (c *tuneConfig) check(argv []string) error {
	c.Bisect.Argv, c.Bisect.PhaseTime = argv, time.Duration(c.seconds*float64(time.Second))
	c.Cores, c.MemoryLimit, c.Out = runtime.NumCPU(), c.memoryMB*1e6, c.out
	switch {
	case len(argv) == 0:
		return needsCommand("tune", argv)
	case c.seconds <= 0:
		return usageError(fmt.Errorf("--seconds-per-trial %g: want a positive number", c.seconds))
	case c.Rounds < 1:
		return usageError(fmt.Errorf("--rounds %d: want at least 1", c.Rounds))
	case c.Budget <= 0:
		return usageError(fmt.Errorf("--budget %s: want a positive duration", c.Budget))
	case c.memoryMB < 0:
		return usageError(fmt.Errorf("--memory-limit %g: want a positive number of MB", c.memoryMB))
	}
	return nil
}

// runTune runs the tune c describes and prints its result.
func runTune(ctx context.Context, c tuneConfig, stdout, stderr io.Writer) error {
	w, err := watcher(c.noTUI, c.noGPU, stderr)
	if err != nil {
		return err
	}
	rep, err := runner.Tune(ctx, c.Config, c.from, w, c.out)
	switch {
	case err != nil:
		return err
	case c.asJSON:
		err = writeJSON(stdout, rep)
	default:
		rep.WriteTable(stdout)
	}
	return experimentStatus(err, rep.Interrupted, rep.Bisect.FailureStatus())
}
