package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/term"

	pypublish "github.com/pipetop/pipetop/clients/python"
	"github.com/pipetop/pipetop/monitor/child"
	"github.com/pipetop/pipetop/monitor/tune"
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

// runCommand runs the command c names, instrumented, and prints the
// summary of its run.
func runCommand(ctx context.Context, c runConfig, stdout, stderr io.Writer) error {
	env, planOut, err := runEnv(c)
	if err != nil {
		return err
	}
	if planOut != "" {
		defer os.RemoveAll(filepath.Dir(planOut))
	}
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, stderr
	tty := term.IsTerminal(os.Stdin.Fd()) && term.IsTerminal(os.Stdout.Fd())
	monitor := tty && !c.noTUI
	out := child.NewHeld(os.Stdout)
	switch {
	case monitor:
		// The monitor owns the screen while it is open: the command's
		// output waits and is printed when the monitor closes.
		cmd.Stdout, cmd.Stderr = out, out
	case c.asJSON:
		cmd.Stdout = stderr // stdout carries the summary only
	}
	start := time.Now()
	if err := child.Adopt(); err != nil {
		fmt.Fprintln(stderr, "pipetop:", err, "(what the command leaves running when it exits is not stopped)")
	}
	p, err := child.Start(cmd, child.Options{Terminal: tty})
	if err != nil {
		return fmt.Errorf("run %s: %w", c.argv[0], err)
	}
	defer p.Close()
	kept := keepLive(ctx, p.Pid())
	var rec *runRecorder
	if c.record != "" {
		rec = startRecorder(ctx, c.record, p.Pid(), c.argv, c.noGPU, stderr)
	}

	if monitor {
		monitorChild(ctx, c, p, out, stderr)
	}
	status, waitErr := p.Wait()
	p.Settle(settleGrace, func(format string, args ...any) { fmt.Fprintf(stderr, "pipetop: "+format+"\n", args...) })
	if rec != nil {
		if err := rec.stop(); err != nil {
			fmt.Fprintln(stderr, "pipetop:", err)
		}
	}
	if waitErr != nil {
		return fmt.Errorf("run %s: %w", c.argv[0], waitErr)
	}
	if err := report(summaryDir(), start, kept.stop(), c.asJSON, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "pipetop:", err)
	}
	if planOut != "" {
		fmt.Fprintf(stderr, "pipetop: --apply %s: %s\n", c.apply, tune.DescribeOutcome(tune.ReadPlanReports(planOut)))
	}
	if status != 0 {
		return exitStatus(status)
	}
	return nil
}

// settleGrace is how long what the command left running gets for each of
// SIGINT and SIGTERM once pipetop was asked to stop.
const settleGrace = 5 * time.Second

// runEnv unpacks the embedded publisher and returns the child's
// environment: the publisher on PYTHONPATH behind a sitecustomize
// bootstrap, the name, the summary left for pipetop to print, and with
// --apply the plan, in a directory of its own where the script reports
// what it applied (planOut).
func runEnv(c runConfig) (env []string, planOut string, err error) {
	root, err := pypublish.CacheRoot()
	if err != nil {
		return nil, "", err
	}
	dir, err := pypublish.Unpack(root)
	if err != nil {
		return nil, "", err
	}
	set := []string{"PIPETOP_SUMMARY=file"}
	if c.name != "" {
		set = append(set, "PIPETOP_NAME="+c.name)
	}
	if c.apply != "" {
		plan, err := tune.PlanOf(c.apply)
		if err != nil {
			return nil, "", fmt.Errorf("--apply: %w", err)
		}
		tmp, err := os.MkdirTemp("", "pipetop-apply-")
		if err != nil {
			return nil, "", fmt.Errorf("--apply: %w", err)
		}
		penv, out, err := tune.WritePlan(plan, tmp, "plan.json")
		if err != nil {
			os.RemoveAll(tmp)
			return nil, "", fmt.Errorf("--apply: %w", err)
		}
		set, planOut = append(set, penv...), out
	}
	env, err = pypublish.Env(os.Environ(), dir, set...)
	return env, planOut, err
}

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

// monitorChild waits for the child's socket and opens the monitor on it;
// the monitor closes when the child exits (or on q, and then the run goes
// on; on Ctrl-C the run is stopped).
func monitorChild(ctx context.Context, c runConfig, p *child.Process, out *child.Held, stderr io.Writer) {
	fmt.Fprintf(stderr, "pipetop: the monitor opens when pid %d starts training\n", p.Pid())
	path, ok := child.AwaitSocket(p.Pid(), p.Exited())
	if !ok {
		return // the child ended before it published anything
	}
	childCtx, cancel := context.WithCancel(ctx)
	go func() {
		<-p.Exited()
		cancel()
	}()
	args := []string{"attach", path}
	if c.noGPU {
		args = append(args, "--no-gpu")
	}
	mc, err := parse(args, stderr)
	if err == nil {
		out.Hold()
		err = interactive(childCtx, mc)
		out.Release()
	}
	if errors.Is(err, tea.ErrInterrupted) {
		fmt.Fprintf(stderr, "pipetop: Ctrl-C: stopping pid %d and what it started\n", p.Pid())
		p.Interrupt()
		return
	}
	if err != nil {
		fmt.Fprintln(stderr, "pipetop: monitor:", err)
	}
	if childCtx.Err() == nil {
		fmt.Fprintf(stderr, "pipetop: monitor closed; pid %d runs on (Ctrl-C stops it)\n", p.Pid())
	}
}
