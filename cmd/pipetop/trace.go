package main

import (
	"context"
	"errors"
	"flag"
	"io"

	"github.com/pipetop/pipetop/export/trace"
)

// traceFlags is pipetop trace: a recording as Chrome/Perfetto
// trace-event JSON.
func traceFlags(fs *flag.FlagSet) runFunc {
	out := fs.String("o", "", "the trace-event JSON `file` to write (opens in Perfetto's UI)")
	return func(_ context.Context, pos []string, _, stderr io.Writer) error {
		if *out == "" {
			return usageError(errors.New("trace needs -o FILE"))
		}
		return trace.WriteFile(pos[0], *out, stderr)
	}
}
