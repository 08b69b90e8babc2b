package export

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// Options configure an Exporter.
type Options struct {
	// Interval is how often the host and the trainer are sampled.
	Interval time.Duration
	// Window is the span of steps the trainer metrics summarize.
	Window snapshot.Window
	// Host is the host label of pipetop_trainer_info (the machine's name).
	Host string
	// ErrorLog receives scrape errors; nil drops them.
	ErrorLog *log.Logger
}

// Exporter samples a monitor.Collector every Options.Interval and serves
// the latest snapshot as Prometheus metrics from its own registry.
type Exporter struct {
	src     *monitor.Snapshotter
	opts    Options
	metrics *Collector
	reg     *prometheus.Registry
}

// New returns an Exporter over src. Interval must be positive.
func New(src *monitor.Snapshotter, opts Options) *Exporter {
	c := NewCollector(src.SourceNames())
	c.SetFresh(src.Fresh)
	c.SetHost(opts.Host)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	return &Exporter{src: src, opts: opts, metrics: c, reg: reg}
}

// Sample takes one snapshot at now and makes it the one scrapes read.
func (e *Exporter) Sample(now time.Time) {
	s := e.src.Snapshot(now, e.opts.Window)
	e.metrics.Update(&s)
}

// Run samples at once and then every interval until ctx ends.
func (e *Exporter) Run(ctx context.Context) {
	t := time.NewTicker(e.opts.Interval)
	defer t.Stop()
	e.Sample(time.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			e.Sample(now)
		}
	}
}

// Handler serves the metrics at /metrics and a page linking to them at /.
func (e *Exporter) Handler() http.Handler {
	ho := promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}
	if e.opts.ErrorLog != nil {
		ho.ErrorLog = e.opts.ErrorLog
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(e.reg, ho))
	mux.HandleFunc("GET /{$}", index)
	return mux
}

const indexPage = `<!DOCTYPE html>
<html><head><title>pipetop exporter</title></head>
<body><h1>pipetop exporter</h1><p><a href="/metrics">Metrics</a></p></body></html>
`

func index(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, indexPage)
}

// Serve samples (see Run) and serves Handler on ln until ctx ends, then
// shuts the server down. It returns nil after ctx ends, else why serving
// stopped.
func (e *Exporter) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: e.Handler(), ReadHeaderTimeout: 10 * time.Second}
	ctx, cancel := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		e.Run(ctx)
		close(sampled)
	}()
	defer func() {
		cancel()
		<-sampled
	}()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve http on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("stop http on %s: %w", ln.Addr(), err)
	}
	return nil
}
