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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/pipetop/pipetop/internal/cli"
	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/tui/view"
)

// Exit statuses besides 0, 1 (an error) and 2 (a bad command line).
const (
	// exitNotAttached: the trainer the command line asked for could not
	// be attached: none matches it, or every attempt failed (the
	// --once/--json snapshot is still printed).
	exitNotAttached = 3
	// exitRegression: pipetop compare --fail-if-slower found B regressed.
	exitRegression = 4
)

// regression is the error of a comparison that failed its gate; the line
// saying what regressed is already printed.
func regression(line string) error {
	return cli.Status{Code: exitRegression, Err: errors.New(line), Quiet: true}
}

// exitStatus is the exit status of the command pipetop run (bisect, tune)
// started or decided; main exits with it.
func exitStatus(code int) error {
	return cli.Status{Code: code, Err: fmt.Errorf("command exited with status %d", code), Quiet: true}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if code := exitCode(err, os.Stderr); code != 0 {
		os.Exit(code)
	}
}

// exitCode is the exit status for the error a command returned
// (cli.Program.ExitCode; a trainer not attached is exitNotAttached).
func exitCode(err error, stderr io.Writer) int {
	var na view.NotAttached
	if errors.As(err, &na) || errors.Is(err, ipc.ErrNoTrainer) {
		err = cli.Status{Code: exitNotAttached, Err: err}
	}
	return program().ExitCode(err, stderr)
}

// writeJSON writes v to w as indented JSON (the --json of every command).
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
