package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/sources"
)

// recordFlags is pipetop record: attach like pipetop attach and write
// everything to a recording until interrupted (or --duration).
func recordFlags(fs *flag.FlagSet) runFunc {
	var o monitor.RecordOptions
	fs.StringVar(&o.Path, "o", "", "the recording `file` (default pipetop-NAME-TIME.pipetop)")
	fs.DurationVar(&o.Interval, "interval", time.Second, "how often host and GPU readings are recorded")
	fs.DurationVar(&o.Duration, "duration", 0, "stop after this long (default: until interrupted)")
	noGPU := fs.Bool("no-gpu", false, "do not load NVML")
	return func(ctx context.Context, pos []string, _, stderr io.Writer) error {
		if o.Interval < 50*time.Millisecond {
			return usageError(fmt.Errorf("--interval %v: want at least 50ms", o.Interval))
		}
		o.Source = strings.Join(pos, "")
		return monitor.Record(ctx, o.Source, sources.Registered(*noGPU), o, func(path string) {
			fmt.Fprintf(stderr, "pipetop: recording to %s (Ctrl-C to stop)\n", path)
		})
	}
}
