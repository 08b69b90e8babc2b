package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/pipetop/pipetop/internal/cli"
	"github.com/pipetop/pipetop/metrics/pystack"
)

// stacksFlags is pipetop stacks PID: every thread's Python stack of a
// process, read once from outside it.
func stacksFlags(fs *flag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print the stacks as JSON")
	return func(_ context.Context, pos []string, stdout, _ io.Writer) error {
		pid, err := strconv.Atoi(pos[0])
		if err != nil {
			return cli.Usage(fmt.Errorf("stacks: %q is not a process id", pos[0]))
		}
		d, err := pystack.ReadDump(pid)
		if err != nil {
			return fmt.Errorf("stacks: %w", err)
		}
		if *asJSON {
			return d.WriteJSON(stdout)
		}
		return d.WriteText(stdout)
	}
}
