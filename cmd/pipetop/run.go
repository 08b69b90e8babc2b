package main

import (
	"context"
	"flag"
	"io"
	"os"

	"github.com/pipetop/pipetop/internal/cli"
	"github.com/pipetop/pipetop/monitor/runner"
)

// runConfig is the command line of pipetop run.
type runConfig struct {
	runner.Config
	name, profile string
	noTUI, noGPU  bool
}

// runFlags is pipetop run.
func runFlags(fs *flag.FlagSet) runFunc {
	var c runConfig
	c.declare(fs)
	return func(ctx context.Context, argv []string, stdout, stderr io.Writer) error {
		if err := c.check(argv); err != nil {
			return err
		}
		if c.profile != "" {
			stop, err := cli.StartProfile(c.profile)
			if err != nil {
				return err
			}
			defer stop()
		}
		return runCommand(ctx, c, stdout, stderr)
	}
}

// check takes the command to run, argv, and checks the command line.
func (c *runConfig) check(argv []string) error {
	c.Argv = argv
	if err := needsCommand("run", argv); err != nil {
		return err
	}
	return checkName(c.name)
}

// runCommand runs the command c names, instrumented, with the monitor on
// a terminal, and prints the summary of its run.
func runCommand(ctx context.Context, c runConfig, stdout, stderr io.Writer) error {
	env, err := runner.Env(c.name)
	if err != nil {
		return err
	}
	c.Env, c.Terminal, c.Sources, c.Stdin, c.Stdout, c.Stderr = env, terminal(), sourcesFor(c.noGPU), os.Stdin, stdout, stderr
	if c.Show, c.Refresh, err = liveView(c.noTUI, c.noGPU, stderr); err != nil {
		return err
	}
	status, err := runner.Run(ctx, c.Config)
	if err == nil && status != 0 {
		err = exitStatus(status)
	}
	return err
}

// declare declares the flags of pipetop run on fs.
func (c *runConfig) declare(fs *flag.FlagSet) {
	fs.StringVar(&c.name, "name", "", "trainer name (default: the script's name)")
	fs.BoolVar(&c.noTUI, "no-tui", false, "do not open the monitor; only run the command and print the summary")
	fs.BoolVar(&c.JSON, "json", false, "print the end-of-run summary as JSON on stdout instead of the table")
	fs.BoolVar(&c.noGPU, "no-gpu", false, "monitor: do not load NVML")
	fs.StringVar(&c.Record, "record", "", "record the run (every rank, and the host's readings) to this `file`, as pipetop record does")
	fs.StringVar(&c.profile, "cpuprofile", "", "write a Go CPU profile of pipetop's own work (the monitor, the readers) to `file`")
	fs.StringVar(&c.Apply, "apply", "", "run with the settings of this pipetop tune report (or plan) `file`, without editing the script")
}
