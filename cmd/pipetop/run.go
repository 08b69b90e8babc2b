package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/charmbracelet/x/term"

	"github.com/pipetop/pipetop/monitor/runner"
	"github.com/pipetop/pipetop/monitor/source"
	"github.com/pipetop/pipetop/monitor/sources"
)

// runConfig is the command line of pipetop run.
type runConfig struct {
	name   string
	noTUI  bool
	asJSON bool
	noGPU  bool
	record string // --record: the recording file, "" for none
	apply  string // --apply: a tune report or plan whose settings the script runs with
	argv   []string
}

// runLong is what pipetop run -h says it does.
const runLong = `Runs CMD (e.g. python3 train.py) with pipetop's automatic PyTorch
instrumentation: every Python process it starts publishes its training
steps with no change to the script. With a terminal, the monitor opens
attached to it (q closes the monitor, the run goes on; Ctrl-C stops the run);
without one, or with --no-tui, pipetop only runs it. pipetop returns only once every process the
command started has exited: what it leaves running when it exits (the ranks
torch.multiprocessing.spawn started) is waited for, or, after a Ctrl-C,
SIGTERM or SIGHUP, stopped (SIGINT, then SIGTERM and SIGKILL 5 s apart),
and pipetop says which. When the run ends, pipetop prints the stage
table, throughput and verdict of the whole run (also written to
pipetop-summary-NAME-PID.json) and exits with the command's status.
A launcher that starts the ranks of a data-parallel run (torchrun, a shell
script that sets RANK and WORLD_SIZE, srun) gets one job summary for its
ranks instead (pipetop-job-RUN.json; each rank's own file stays), with the
straggler over the run and over time; torch.distributed collectives and
DDP's wait for the other ranks count as comm (PIPETOP_COMM=0: not).
PIPETOP_AUTO=0 runs the command without instrumentation;
PIPETOP_STACKS_HZ sets the stack samples of the training thread and the
DataLoader workers (default 100 a second, 0 off), from which the verdict
names the code the time goes to. --record FILE records the run (every
rank, and the host's readings each second) for pipetop replay, summary,
compare and report. --apply FILE runs the script with the DataLoader and
thread settings of a pipetop tune report (its winner's plan) or a plan file,
without editing it (docs/tune.md).`

// runFlags is pipetop run.
func runFlags(fs *flag.FlagSet) runFunc {
	var c runConfig
	c.declare(fs)
	return func(ctx context.Context, argv []string, stdout, stderr io.Writer) error {
		if err := c.check(argv); err != nil {
			return err
		}
		return runCommand(ctx, c, stdout, stderr)
	}
}

// declare declares the flags of pipetop run on fs.
func (c *runConfig) declare(fs *flag.FlagSet) {
	fs.StringVar(&c.name, "name", "", "trainer name (default: the script's name)")
	fs.BoolVar(&c.noTUI, "no-tui", false, "do not open the monitor; only run the command and print the summary")
	fs.BoolVar(&c.asJSON, "json", false, "print the end-of-run summary as JSON on stdout instead of the table")
	fs.BoolVar(&c.noGPU, "no-gpu", false, "monitor: do not load NVML")
	fs.StringVar(&c.record, "record", "", "record the run (every rank, and the host's readings) to this `file`, as pipetop record does")
	fs.StringVar(&c.apply, "apply", "", "run with the settings of this pipetop tune report (or plan) `file`, without editing the script")
}

// check takes the command to run, argv, and checks the command line.
func (c *runConfig) check(argv []string) error {
	c.argv = argv
	if len(c.argv) == 0 {
		return usageError{errors.New("run needs a command: pipetop run -- python3 train.py")}
	}
	if strings.ContainsAny(c.name, "/\x00\n") {
		return usageError{fmt.Errorf("--name %q: no slashes or control characters", c.name)}
	}
	return nil
}

// runCommand runs the command c names, instrumented, with the monitor on
// a terminal, and prints the summary of its run.
func runCommand(ctx context.Context, c runConfig, stdout, stderr io.Writer) error {
	env, err := runner.Env(c.name)
	if err != nil {
		return err
	}
	rc := runner.Config{Argv: c.argv, Env: env, Terminal: terminal(), Record: c.record, Apply: c.apply,
		Sources: func() []source.Source { return sources.Registered(c.noGPU) },
		JSON:    c.asJSON, SummaryDir: summaryDir(), Stdin: os.Stdin, Stdout: stdout, Stderr: stderr}
	if !c.noTUI {
		if rc.Show, rc.Refresh, err = liveView(c.noGPU, stderr); err != nil {
			return err
		}
	}
	status, err := runner.Run(ctx, rc)
	if err == nil && status != 0 {
		err = exitStatus(status)
	}
	return err
}

// terminal is whether pipetop's stdin and stdout are a terminal.
func terminal() bool { return term.IsTerminal(os.Stdin.Fd()) && term.IsTerminal(os.Stdout.Fd()) }

// summaryDir is where the child writes its summary: $PIPETOP_SUMMARY_DIR,
// else the working directory both share.
func summaryDir() string {
	if d := os.Getenv("PIPETOP_SUMMARY_DIR"); d != "" {
		return d
	}
	if d, err := os.Getwd(); err == nil {
		return d
	}
	return "."
}
