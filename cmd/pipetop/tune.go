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
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/pipetop/pipetop/monitor/bisect"
	"github.com/pipetop/pipetop/monitor/runner"
	"github.com/pipetop/pipetop/monitor/tune"
	"github.com/pipetop/pipetop/monitor/tunefile"
)

// tuneLong is what pipetop tune -h says it does.
const tuneLong = `Tunes an unmodified PyTorch script's input pipeline by measuring: a bisect
first (its loader alone, its loop on cached batches, the script as it is;
or --from a bisect's JSON), then only what the bisect says matters:
  input-bound  the training DataLoader's num_workers (doubling while the
               loader delivers more), torch threads in each worker,
               prefetch_factor and persistent_workers, in loader trials
  contention   the main process's intra-op threads with the workers, in
               full trials
  otherwise    nothing in the pipeline helps: it says so and stops
The best settings are confirmed in full runs that alternate with the
script's own (--rounds of each); the winner is the cheapest setting within
the noise of the fastest. Settings are applied by the instrumentation,
without editing the script; the report (-o, default tune.json) keeps the
winner's plan: pipetop run --apply tune.json -- CMD trains with it. A
trial that would leave less than 10 % of the memory is stopped (refused).
The script's side effects happen once per trial. Exit status 3 when the
bisect had a failed phase.`

// tuneConfig is the command line of pipetop tune.
type tuneConfig struct {
	budget    time.Duration
	seconds   float64
	rounds    int
	from      string
	out       string
	memoryMB  float64
	noTUI     bool
	asJSON    bool
	noGPU     bool
	startWait time.Duration
	argv      []string
}

// tuneFlags is pipetop tune.
func tuneFlags(fs *flag.FlagSet) runFunc {
	var c tuneConfig
	c.declare(fs)
	return func(ctx context.Context, argv []string, stdout, stderr io.Writer) error {
		if err := c.check(argv); err != nil {
			return err
		}
		return runTune(ctx, c, stdout, stderr)
	}
}

// declare declares the flags of pipetop tune on fs.
func (c *tuneConfig) declare(fs *flag.FlagSet) {
	fs.DurationVar(&c.budget, "budget", 10*time.Minute, "the most the whole tune may take; the best so far is advised when it runs out")
	fs.Float64Var(&c.seconds, "seconds-per-trial", 10, "measured `seconds` of each phase and trial, after its warm-up")
	fs.IntVar(&c.rounds, "rounds", 3, "full runs of each finalist and of the script's own settings, alternating")
	fs.StringVar(&c.from, "from", "", "start from this pipetop bisect --json `file` instead of bisecting")
	fs.StringVar(&c.out, "o", tunefile.Name, "write the report (and the winner's plan, for pipetop run --apply) to this `file`")
	fs.Float64Var(&c.memoryMB, "memory-limit", 0, "the memory a trial may fill, in `MB` (default: the host's)")
	fs.DurationVar(&c.startWait, "start-timeout", 2*time.Minute, "how long a trial may take to its first training step")
	fs.BoolVar(&c.noTUI, "no-tui", false, "do not show the trials live; only print the result")
	fs.BoolVar(&c.asJSON, "json", false, "print the report as JSON (docs/tune.md) instead of the table")
	fs.BoolVar(&c.noGPU, "no-gpu", false, "do not load NVML")
}

// check takes the command, argv, and checks the command line.
func (c *tuneConfig) check(argv []string) error {
	c.argv = argv
	switch {
	case len(argv) == 0:
		return usageError{errors.New("tune needs a command: pipetop tune -- python3 train.py")}
	case c.seconds <= 0:
		return usageError{fmt.Errorf("--seconds-per-trial %g: want a positive number", c.seconds)}
	case c.rounds < 1:
		return usageError{fmt.Errorf("--rounds %d: want at least 1", c.rounds)}
	case c.budget <= 0:
		return usageError{fmt.Errorf("--budget %s: want a positive duration", c.budget)}
	case c.memoryMB < 0:
		return usageError{fmt.Errorf("--memory-limit %g: want a positive number of MB", c.memoryMB)}
	}
	return nil
}

// runTune runs the tune c describes and prints its result.
func runTune(ctx context.Context, c tuneConfig, stdout, stderr io.Writer) error {
	cfg, cleanup, err := c.tuneConfig(stderr)
	if err != nil {
		return err
	}
	defer cleanup()
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGHUP)
	defer stop()
	rep, err := tune.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if err := writeJSON(c.out, rep); err != nil {
		return err
	}
	if c.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		rep.WriteTable(stdout)
	}
	switch {
	case rep.Interrupted:
		return exitStatus(exitInterrupted)
	case rep.Bisect.Failed():
		return exitStatus(exitPhaseFailed)
	}
	return nil
}

// tuneConfig is what tune.Run needs from the command line, and what to
// remove once it is done.
func (c tuneConfig) tuneConfig(stderr io.Writer) (tune.Config, func(), error) {
	env, err := runner.Env("")
	if err != nil {
		return tune.Config{}, nil, err
	}
	w, err := watcher(c.noTUI, c.noGPU, stderr)
	if err != nil {
		return tune.Config{}, nil, err
	}
	dir, err := os.MkdirTemp("", "pipetop-tune-")
	if err != nil {
		return tune.Config{}, nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	cfg := tune.Config{Budget: c.budget, Rounds: c.rounds, Cores: runtime.NumCPU(), MemoryLimit: c.memoryMB * 1e6, Log: w.Out,
		Bisect: bisect.Config{Argv: c.argv, Env: env, PhaseTime: time.Duration(c.seconds * float64(time.Second)),
			StartTimeout: c.startWait, Dir: dir, Sources: w.Sources, Stdout: w.Out, Stderr: w.Out, Log: w.Out, Watch: w.Watch}}
	if c.from != "" {
		r, err := bisect.ReadReport(c.from)
		if err != nil {
			cleanup()
			return tune.Config{}, nil, fmt.Errorf("--from: %w", err)
		}
		if strings.Join(r.Command, " ") != strings.Join(c.argv, " ") {
			fmt.Fprintf(stderr, "pipetop: --from %s bisected %q, not this command\n", c.from, strings.Join(r.Command, " "))
		}
		cfg.From = &r
	}
	return cfg, cleanup, nil
}

// writeJSON writes v to path, indented.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err == nil {
		err = os.WriteFile(path, append(b, '\n'), 0o644)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
