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
	out := fs.String("o", "", "the recording `file` (default pipetop-NAME-TIME.pipetop)")
	interval := fs.Duration("interval", time.Second, "how often host and GPU readings are recorded")
	duration := fs.Duration("duration", 0, "stop after this long (default: until interrupted)")
	noGPU := fs.Bool("no-gpu", false, "do not load NVML")
	return func(ctx context.Context, pos []string, _, stderr io.Writer) error {
		if *interval < 50*time.Millisecond {
			return usageError{fmt.Errorf("--interval %v: want at least 50ms", *interval)}
		}
		spec := strings.Join(pos, "")
		m, err := monitor.Open(ctx, spec, monitor.Options{Sources: sources.Registered(*noGPU)})
		if err != nil {
			return err
		}
		if m.Pick {
			m.Close()
			return severalTrainers("record")
		}
		path := *out
		if path == "" {
			path = defaultRecording(spec, time.Now())
		}
		rec, err := monitor.StartRecorder(ctx, m, monitor.RecordOptions{Path: path, Source: spec, Interval: *interval, Duration: *duration})
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "pipetop: recording to %s (Ctrl-C to stop)\n", path)
		return rec.Wait()
	}
}

// defaultRecording names a recording after the trainer and the time.
func defaultRecording(spec string, now time.Time) string {
	name := "trainer"
	if spec != "" && !strings.Contains(spec, "/") {
		name = spec
	}
	return fmt.Sprintf("pipetop-%s-%s.pipetop", name, now.Format("20060102-150405"))
}
