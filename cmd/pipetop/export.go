package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"

	"github.com/pipetop/pipetop/tui"
	"github.com/pipetop/pipetop/tui/export"
	"github.com/pipetop/pipetop/tui/feed"
)

// serveMetrics implements pipetop export: the collector the terminal view
// uses, sampled every --interval and served as Prometheus metrics.
func serveMetrics(ctx context.Context, c config, stderr io.Writer) error {
	attach, pick, err := target(c.spec)
	if err != nil {
		return err
	}
	if pick {
		return severalTrainers("export")
	}
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", c.listen, err)
	}
	f := feed.New(0)
	defer f.Close()
	f.Attach(ctx, attach)
	col, closeGPU := newCollector(f, c.noGPU)
	defer closeGPU()
	e := export.New(col, export.Options{Interval: c.interval, Window: tui.Windows[c.window],
		ErrorLog: log.New(stderr, "pipetop export: ", log.LstdFlags)})
	fmt.Fprintf(stderr, "pipetop: serving http://%s/metrics\n", ln.Addr())
	return e.Serve(ctx, ln)
}
