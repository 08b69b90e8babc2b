package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"os"

	"github.com/pipetop/pipetop/export"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/sources"
)

// serveMetrics implements pipetop export: the collector the terminal view
// uses, sampled every --interval and served as Prometheus metrics.
func serveMetrics(ctx context.Context, c config, stderr io.Writer) error {
	m, err := monitor.Open(ctx, c.spec, monitor.Options{Sources: sources.Registered(c.noGPU)})
	if err != nil {
		return err
	}
	defer m.Close()
	if m.Pick {
		return severalTrainers("export")
	}
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", c.listen, err)
	}
	host, _ := os.Hostname()
	e := export.New(m.Snapshotter, export.Options{Interval: c.interval, Window: monitor.Windows[c.window], Host: host,
		ErrorLog: log.New(stderr, "pipetop export: ", log.LstdFlags)})
	fmt.Fprintf(stderr, "pipetop: serving http://%s/metrics\n", ln.Addr())
	return e.Serve(ctx, ln)
}
