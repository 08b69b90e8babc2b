package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/pipetop/pipetop/export/trace"
	"github.com/pipetop/pipetop/monitor/recording"
)

// traceFlags is pipetop trace: a recording as Chrome/Perfetto
// trace-event JSON.
func traceFlags(fs *flag.FlagSet) runFunc {
	out := fs.String("o", "", "the trace-event JSON `file` to write (opens in Perfetto's UI)")
	return func(_ context.Context, pos []string, _, stderr io.Writer) error {
		if *out == "" {
			return usageError{errors.New("trace needs -o FILE")}
		}
		_, es, err := recording.ReadAll(pos[0])
		if es == nil && err != nil {
			return err
		}
		if err != nil {
			fmt.Fprintf(stderr, "pipetop: %v; tracing up to there\n", err)
		}
		f, err := os.Create(*out)
		if err != nil {
			return fmt.Errorf("trace: %w", err)
		}
		if err := trace.Write(f, es); err != nil {
			f.Close()
			return fmt.Errorf("write trace %s: %w", *out, err)
		}
		return f.Close()
	}
}
