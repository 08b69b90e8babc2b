package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"time"

	"github.com/pipetop/pipetop/export"
	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/sources"
)

// showExport is pipetop export: the collector the terminal view
// uses, sampled every --interval and served as Prometheus metrics. The
// address is bound first, so a bad --listen is told at once, not once the
// trainer appears.
func showExport(ctx context.Context, c config, _, stderr io.Writer) error {
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", c.listen, err)
	}
	defer ln.Close()
	m, err := openAwaiting(ctx, c, stderr)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while waiting, as a serving exporter stops
		}
		return err
	}
	defer m.Close()
	if m.Pick {
		return severalTrainers("export")
	}
	host, _ := os.Hostname()
	e := export.New(m.Snapshotter, export.Options{Interval: c.interval, Window: monitor.Windows[c.window], Host: host,
		ErrorLog: log.New(stderr, "pipetop export: ", log.LstdFlags)})
	fmt.Fprintf(stderr, "pipetop: serving http://%s/metrics\n", ln.Addr())
	return e.Serve(ctx, ln)
}

// openAwaiting opens the monitor for the named trainer or run, waiting
// (every awaitEvery, until ctx ends) while there is none yet: an exporter
// is a daemon and is often started before the trainer it serves.
func openAwaiting(ctx context.Context, c config, stderr io.Writer) (*monitor.Monitor, error) {
	said := false
	for {
		m, err := monitor.Open(ctx, c.spec, monitor.Options{Sources: sources.Registered(c.noGPU)})
		if err == nil || c.spec == "" || !errors.Is(err, ipc.ErrNoTrainer) {
			return m, err
		}
		if !said {
			fmt.Fprintf(stderr, "pipetop export: waiting: %v\n", err)
			said = true
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("export %s: %w", c.spec, ctx.Err())
		case <-time.After(awaitEvery):
		}
	}
}

// awaitEvery is how often pipetop export looks again for a named trainer
// that is not there yet.
const awaitEvery = 500 * time.Millisecond
