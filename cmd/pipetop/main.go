// Command pipetop is a terminal monitor for training runs: it attaches over
// a Unix socket to a running trainer and shows GPU activity, memory,
// per-core CPU, a flame bar of where each iteration spends its time and a
// verdict on the bottleneck. Without a trainer it is a GPU/CPU monitor.
//
// Its subcommands (attach, ls, export, record, replay, summary, compare,
// report, trace, flame, stacks, run) are the rows of one command table
// (commands.go), each in a file of its own; pipetop -h lists them.
// docs/pipetop.md describes the panes, keys, the --json schema and the
// exported metrics.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/pipetop/pipetop/ipc"
)

// usageError is a bad command line; it exits with status 2.
type usageError struct{ error }

// exitNotAttached is the exit status when the trainer the command line
// asked for could not be attached: none matches it, or every attempt
// failed (the --once/--json snapshot is still printed).
const exitNotAttached = 3

// notAttached is the error of a run that could not attach its trainer.
type notAttached struct{ error }

// exitRegression is the exit status of pipetop compare --fail-if-slower
// when B regressed.
const exitRegression = 4

// regression is the error of a comparison that failed its gate; the line
// saying what regressed is already printed.
type regression struct{ error }

// exitStatus is the exit status of the command pipetop run started; main
// exits with it.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("command exited with status %d", int(e)) }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if code := exitCode(err, os.Stderr); code != 0 {
		os.Exit(code)
	}
}

// exitCode is the exit status for the error a command returned; it prints
// the error to stderr when the status alone does not say it.
func exitCode(err error, stderr io.Writer) int {
	var ue usageError
	var na notAttached
	var es exitStatus
	var re regression
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &es):
		return int(es)
	case errors.As(err, &re):
		return exitRegression
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "pipetop:", err)
		return 2
	case errors.As(err, &na), errors.Is(err, ipc.ErrNoTrainer):
		fmt.Fprintln(stderr, "pipetop:", err)
		return exitNotAttached
	}
	fmt.Fprintln(stderr, "pipetop:", err)
	return 1
}
