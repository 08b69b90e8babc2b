package main

import (
	"context"
	"flag"
	"io"

	"github.com/pipetop/pipetop/monitor/summary"
)

// summaryFlags is pipetop summary: the summary of a recorded run.
func summaryFlags(fs *flag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print the summary as JSON (what pipetop compare reads)")
	return func(_ context.Context, pos []string, stdout, _ io.Writer) error {
		r, err := summary.FromFile(pos[0])
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(stdout, r)
		}
		return summary.WriteText(stdout, r)
	}
}
