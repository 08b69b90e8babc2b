package main

import (
	"context"
	"flag"
	"io"

	runreport "github.com/pipetop/pipetop/export/report"
)

// reportFlags is pipetop report: a run, or a bisect, as one self-contained
// HTML page with plots.
func reportFlags(fs *flag.FlagSet) runFunc {
	out := fs.String("o", "", "the HTML `file` to write (default: FILE's name with .html; a bisect --record DIR: DIR/bisect.html)")
	return func(_ context.Context, pos []string, _, stderr io.Writer) error {
		return runreport.WriteFile(pos[0], *out, stderr)
	}
}
