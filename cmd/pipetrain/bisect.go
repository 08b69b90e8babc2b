package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pipetop/pipetop/trainer"
)

func runBisect(args []string) error {
	fs := flag.NewFlagSet("pipetrain bisect", flag.ContinueOnError)
	cfg := trainer.BisectConfig{}
	trainFlags(fs, &cfg.Train)
	seconds := fs.Float64("seconds-per-phase", 10, "measured seconds per phase, after warm-up")
	fs.Int64Var(&cfg.WarmupSteps, "warmup", 3, "unmeasured steps before each phase")
	sweep := fs.String("batch-sweep", "", "comma-separated extra batch sizes for the train-fixed and full phases, e.g. 2,8,32,64")
	asJSON := fs.Bool("json", false, "print the report as JSON (docs/bisect.md) instead of the table")
	noServe := fs.Bool("no-serve", false, "do not open a socket for pipetop")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: pipetrain bisect --data DIR [flags]

Measures the pipeline piece by piece, each phase for a bounded time after warm-up,
and names the bottleneck with the numbers behind it:
  forward      network forward on one fixed in-memory batch
  train-fixed  forward + backward + optimizer on that batch
  loader       the loader alone over the real dataset (no network)
  synthetic    the full loop on in-memory synthetic batches (input without I/O)
  full         the full pipeline
Every phase is published live to pipetop (the phase name shows in its header).

`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.Train.Data == "" {
		fs.Usage()
		return fmt.Errorf("bisect: --data is required")
	}
	var err error
	if cfg.BatchSweep, err = parseSweep(*sweep, cfg.Train.Batch); err != nil {
		return err
	}
	if *seconds <= 0 {
		return fmt.Errorf("--seconds-per-phase %v: want a positive number", *seconds)
	}
	cfg.PhaseTime = time.Duration(*seconds * float64(time.Second))
	cfg.Train.NoServe = *noServe
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := trainer.Bisect(ctx, cfg, os.Stderr)
	if err != nil {
		return fmt.Errorf("bisect: %w", err)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	rep.WriteTable(os.Stdout)
	return nil
}

// parseSweep parses --batch-sweep, leaving out the main batch size.
func parseSweep(s string, main int) ([]int, error) {
	var out []int
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--batch-sweep: %q is not a batch size", f)
		}
		if n != main {
			out = append(out, n)
		}
	}
	return out, nil
}
