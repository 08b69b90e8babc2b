// Command pipetrain is the instrumented Go trainer: it trains the policy,
// bisects the input pipeline, and inspects and rechunks Zarr datasets.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
)

const usage = `pipetrain: an instrumented trainer that pipetop can watch

usage:
  pipetrain train --data DIR ...           train the policy, published to pipetop
  pipetrain bisect --data DIR ...          find the bottleneck, phase by phase, with a verdict
  pipetrain data gen|inspect|rechunk ...   make, inspect and rechunk Zarr datasets (v2 and v3, sharded)
  pipetrain bench loader ...               measure the data loader alone
  pipetrain help                           this text

Run a subcommand with -h for its flags.
`

func main() {
	if err := run(os.Args[1:]); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "pipetrain:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return fmt.Errorf("missing subcommand")
	}
	switch args[0] {
	case "train":
		return runTrain(args[1:])
	case "bisect":
		return runBisect(args[1:])
	case "data":
		return runData(args[1:])
	case "bench":
		return runBench(args[1:])
	case "help", "-h", "--help":
		fmt.Print(usage)
		return nil
	}
	return fmt.Errorf("unknown subcommand %q (see pipetrain help)", args[0])
}
