package main

import (
	"context"
	"fmt"
	"io"

	"github.com/pipetop/pipetop/export"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/sources"
)

// showExport is pipetop export: the collector the terminal view uses,
// sampled every --interval and served as Prometheus metrics.
func showExport(ctx context.Context, c config, _, stderr io.Writer) error {
	open := func() (*monitor.Monitor, error) {
		return monitor.OpenAwait(ctx, c.Spec, monitor.Options{Sources: sources.Registered(c.NoGPU)},
			func(err error) { fmt.Fprintf(stderr, "pipetop export: waiting: %v\n", err) })
	}
	return export.ListenAndServe(ctx, c.listen, open, export.Options{Interval: c.Interval, Window: monitor.Windows[c.Window]}, stderr)
}
