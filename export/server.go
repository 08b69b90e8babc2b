package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// Defaults of pipetop export, which samples for scrapes rather than eyes.
const (
	DefaultListen   = "127.0.0.1:9464"
	DefaultInterval = 5 * time.Second
	DefaultWindow   = "30s"
)

// CheckListen is why addr cannot be an address to serve /metrics at;
// nil when it is one (host:port).
func CheckListen(addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("--listen %q: want host:port, e.g. %s (or :9464 for every interface): %v", addr, DefaultListen, err)
	}
	return nil
}

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

// ListenAndServe is pipetop export: it binds addr first (a bad address is
// told at once, not once the trainer appears), opens the monitor with
// open (which may wait for the trainer: an exporter is often started
// before it), says where it serves on w and serves until ctx ends; ctx
// ending while open waits is no error. Host defaults to this machine's
// name, ErrorLog to w.
func ListenAndServe(ctx context.Context, addr string, open func() (*monitor.Monitor, error), opts Options, w io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", addr, err)
	}
	defer ln.Close()
	m, err := open()
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while waiting, as a serving exporter stops
		}
		return err
	}
	defer m.Close()
	if m.Pick {
		return monitor.PickOne("export")
	}
	if opts.Host == "" {
		opts.Host, _ = os.Hostname()
	}
	if opts.ErrorLog == nil {
		opts.ErrorLog = log.New(w, "pipetop export: ", log.LstdFlags)
	}
	e := New(m.Snapshotter, opts)
	fmt.Fprintf(w, "pipetop: serving http://%s/metrics\n", ln.Addr())
	return e.Serve(ctx, ln)
}
