// Command pipetop is a terminal monitor for training runs: it attaches over
// a Unix socket to a running trainer and shows GPU activity, memory,
// per-core CPU, a flame bar of where each iteration spends its time and a
// verdict on the bottleneck. Without a trainer it is a GPU/CPU monitor.
//
//	pipetop [flags]               the only live trainer, a picker, or monitor only
//	pipetop attach PATH|PID|NAME|RUN  a given trainer, or every rank of its run
//	pipetop ls [--json]           list live trainers, the ranks of a run together
//	pipetop export [PATH|PID|NAME] the same readings as Prometheus metrics over HTTP
//	pipetop record [-o FILE] [NAME] write everything a viewer receives to a recording
//	pipetop replay FILE           the monitor on a recording (--once/--json: the whole run, or --at D)
//	pipetop summary FILE          the end-of-run summary of a recording
//	pipetop compare A B           two runs side by side (--fail-if-slower PCT: a CI gate)
//	pipetop report FILE           a run as one self-contained HTML page with plots
//	pipetop trace FILE -o OUT     Chrome/Perfetto trace-event JSON
//	pipetop flame FILE [-o OUT]   stack samples as speedscope JSON or folded stacks
//	pipetop run [--no-tui] -- CMD  run a PyTorch script instrumented, with no code changes
//
// docs/pipetop.md describes the panes, keys, the --json schema and the
// exported metrics.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	cfgfile "github.com/pipetop/pipetop/cmd/pipetop/internal/config"
	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/tui"
	"github.com/pipetop/pipetop/tui/components/proctable"
)

// usageError is a bad command line; it exits with status 2.
type usageError struct{ error }

// exitNotAttached is the exit status when the trainer the command line
// asked for could not be attached: none matches it, or every attempt
// failed (the --once/--json snapshot is still printed).
const exitNotAttached = 3

// notAttached is the error of a run that could not attach its trainer.
type notAttached struct{ error }

// exitRegression is the exit status of pipetop compare --fail-if-slower
// when B regressed.
const exitRegression = 4

// regression is the error of a comparison that failed its gate; the line
// saying what regressed is already printed.
type regression struct{ error }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if code := exitCode(err, os.Stderr); code != 0 {
		os.Exit(code)
	}
}

// exitCode is the exit status for the error a command returned; it prints
// the error to stderr when the status alone does not say it.
func exitCode(err error, stderr io.Writer) int {
	var ue usageError
	var na notAttached
	var es exitStatus
	var re regression
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &es):
		return int(es)
	case errors.As(err, &re):
		return exitRegression
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "pipetop:", err)
		return 2
	case errors.As(err, &na), errors.Is(err, ipc.ErrNoTrainer):
		fmt.Fprintln(stderr, "pipetop:", err)
		return exitNotAttached
	}
	fmt.Fprintln(stderr, "pipetop:", err)
	return 1
}

// config is the parsed command line.
type config struct {
	cmd      string // "", "attach", "ls" or "export"
	spec     string
	listen   string // export: the HTTP address
	once     bool
	json     bool
	interval time.Duration
	window   int
	width    int
	noGPU    bool
	readOnly bool
	profile  string
	// prometheus is the server a remote view reads the run spec names
	// from (--prometheus or the settings file); rank the rank it shows.
	prometheus string
	rank       int
	// From the settings file (internal/config).
	hidden []string
	sort   string
	theme  string
}

func parse(args []string, stderr io.Writer) (config, error) {
	c := config{}
	if len(args) > 0 && (args[0] == "ls" || args[0] == "attach" || args[0] == "export") {
		c.cmd, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("pipetop", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&c.once, "once", false, "print one text snapshot after collecting for --interval, then exit")
	fs.BoolVar(&c.json, "json", false, "print one JSON snapshot (with ls: the list as JSON), then exit")
	fs.DurationVar(&c.interval, "interval", time.Second, "refresh interval (and collection time of --once/--json; export: 5s)")
	window := fs.String("window", "5s", "summary window: 5s, 30s, 2m or all (export: 30s)")
	fs.StringVar(&c.listen, "listen", defaultListen, "export: serve /metrics at this `host:port`")
	fs.IntVar(&c.width, "width", 0, "width of the --once text (default: the terminal's, else 100)")
	fs.BoolVar(&c.noGPU, "no-gpu", false, "do not load NVML")
	fs.BoolVar(&c.readOnly, "readonly", false, "never send signals from the process table (F9 is refused)")
	fs.StringVar(&c.profile, "cpuprofile", "", "write a Go CPU profile of this run to `file`")
	fs.StringVar(&c.prometheus, "prometheus", "", "read the run from the Prometheus server at `URL` (every host's pipetop export) instead of local sockets: pipetop --prometheus URL [RUN]")
	fs.IntVar(&c.rank, "rank", -1, "with --prometheus: the rank whose flame bar, trainer and host are shown; -1 is the lowest")
	cfgPath := fs.String("config", "", "settings `file` (default: $XDG_CONFIG_HOME or ~/.config, /pipetop/config.toml, when it exists)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage:
  pipetop [flags]                      attach to the only live trainer, pick one of several,
                                       or monitor GPU/CPU until a trainer appears
  pipetop attach PATH|PID|NAME|RUN [flags]
                                       attach to the given trainer; a rank of a
                                       multi-process run attaches every rank of the run
  pipetop ls [--json]                  list live trainers, the ranks of each run together
  pipetop --prometheus URL [RUN] [--rank R] [--once|--json]
                                       every rank of a run on every host, read from the
                                       Prometheus server that scrapes each host's pipetop
                                       export (the only run there when RUN is not given)
  pipetop run [--name N] [--no-tui] -- CMD ARGS...
                                       run a PyTorch script with automatic instrumentation
                                       (see pipetop run -h)
  pipetop export [flags] [PATH|PID|NAME]
                                       serve the same readings as Prometheus metrics at
                                       http://LISTEN/metrics (the only live trainer, or
                                       host metrics until one appears; a NAME not there
                                       yet is waited for)
  pipetop record [-o FILE] [--duration D] [PATH|PID|NAME]
                                       write everything the trainer (every rank of a run)
                                       sends, and the host readings, to a recording
  pipetop replay FILE [--at D] [--once|--json]
                                       the monitor on a recording: ←/→ seek, g/G start/end,
                                       [ ] speed 1x-64x, p pause; --once/--json without
                                       --at show the whole run (its end, window all)
  pipetop summary FILE [--json]        throughput, stage table and verdicts of a whole run
  pipetop compare A B [--json] [--fail-if-slower PCT]
                                       two runs (recordings or summary JSON) side by side;
                                       exit 4 when B is more than PCT % slower beyond the noise
  pipetop report FILE [-o report.html] a self-contained HTML report of a run, with plots
  pipetop trace FILE -o trace.json     Chrome/Perfetto trace-event JSON of a recording
  pipetop flame FILE [-o OUT] [--folded]
                                       the stack samples of a recording (or run summary) as
                                       speedscope JSON, or folded stacks for flamegraph.pl

flags:
`)
		defer fmt.Fprint(fs.Output(), `
exit status: 0 ok; 1 error; 2 bad command line; 3 the trainer asked for
(or the only live one) could not be attached: none matches, or it failed
(wrong protocol version, bad frames, no hello, refused) — --once and --json
still print their snapshot, with link.state "failed" and link.detail saying why;
with --prometheus, the run could not be read (server unreachable, not
Prometheus' API, no such run).
4 pipetop compare --fail-if-slower: B regressed.

environment: PIPETOP_SOCKET_DIR (where trainers' sockets are),
PIPETOP_HELLO_TIMEOUT (default 5s), PIPETOP_AGGREGATES (1: ask trainers for
one aggregate a second instead of every step, 0: never; default: the
full-screen view asks, --once and --json do not; with it they collect a
second longer than --interval).
`)
		fs.PrintDefaults()
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return c, err
			}
			return c, usageError{err}
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := c.settings(*cfgPath, window, set); err != nil {
		return c, err
	}
	if err := c.check(pos, *window, set); err != nil {
		return c, usageError{err}
	}
	return c, nil
}

// settings applies the settings file to the view (not to export or ls);
// flags given on the command line win.
func (c *config) settings(path string, window *string, set map[string]bool) error {
	if c.cmd == "export" || c.cmd == "ls" {
		if path != "" {
			return usageError{fmt.Errorf("--config is not for pipetop %s", c.cmd)}
		}
		return nil
	}
	optional := path == ""
	if optional {
		path = cfgfile.DefaultPath()
	}
	if path == "" {
		return nil
	}
	s, err := cfgfile.Load(path, optional, tui.PaneNames())
	if err != nil {
		return err
	}
	if s.Sort != "" {
		if _, ok := proctable.ColumnByName(s.Sort); !ok {
			return fmt.Errorf("config %s: sort %q: want one of %s", path, s.Sort, proctable.ColumnNames)
		}
	}
	if s.Refresh > 0 && !set["interval"] {
		c.interval = s.Refresh
	}
	if s.Window != "" && !set["window"] {
		if _, ok := monitor.WindowByLabel(s.Window); !ok {
			return fmt.Errorf("config %s: window %q: want 5s, 30s, 2m or all", path, s.Window)
		}
		*window = s.Window
	}
	c.hidden, c.sort, c.theme = s.Hidden, s.Sort, s.Theme
	if s.Prometheus != "" && !set["prometheus"] && c.cmd == "" {
		c.prometheus = s.Prometheus
	}
	return nil
}

// Defaults of pipetop export, which samples for scrapes rather than eyes.
const (
	defaultListen         = "127.0.0.1:9464"
	defaultExportInterval = 5 * time.Second
	defaultExportWindow   = "30s"
)

// check validates the command line; set holds the flags given.
func (c *config) check(pos []string, window string, set map[string]bool) error {
	if c.prometheus != "" && c.cmd != "" {
		return fmt.Errorf("--prometheus is for the view (pipetop --prometheus URL [RUN]), not for pipetop %s", c.cmd)
	}
	switch {
	case c.cmd == "attach" && len(pos) != 1:
		return errors.New("attach needs one trainer: a socket path, a pid or a name (see pipetop ls)")
	case c.cmd == "attach":
		c.spec = pos[0]
	case c.cmd == "export" && len(pos) > 1:
		return fmt.Errorf("export takes at most one trainer, got %d: %s", len(pos), strings.Join(pos, " "))
	case c.cmd == "export" && len(pos) == 1:
		c.spec = pos[0]
	case c.prometheus != "" && len(pos) > 1:
		return fmt.Errorf("--prometheus reads one run, got %d: %s", len(pos), strings.Join(pos, " "))
	case c.prometheus != "" && len(pos) == 1:
		c.spec = pos[0]
	case c.prometheus == "" && set["rank"]:
		return errors.New("--rank is for --prometheus (a local view shows the lowest rank)")
	case len(pos) > 0:
		return fmt.Errorf("unexpected argument %q (did you mean pipetop attach %s?)", pos[0], pos[0])
	}
	if c.cmd == "export" {
		if err := c.checkExport(set); err != nil {
			return err
		}
		if !set["window"] {
			window = defaultExportWindow
		}
	} else if set["listen"] {
		return errors.New("--listen is for pipetop export")
	}
	if c.interval < 50*time.Millisecond {
		return fmt.Errorf("--interval %v: want at least 50ms", c.interval)
	}
	w, ok := monitor.WindowByLabel(window)
	if !ok {
		return fmt.Errorf("--window %q: want 5s, 30s, 2m or all", window)
	}
	c.window = w
	if c.once && c.json {
		return errors.New("--once and --json: pick one")
	}
	if c.width < 0 {
		return fmt.Errorf("--width %d: want a positive number", c.width)
	}
	return nil
}

// checkExport applies the export defaults and rejects the flags that only
// make sense on a terminal.
func (c *config) checkExport(set map[string]bool) error {
	for _, name := range []string{"once", "json", "width"} {
		if set[name] {
			return fmt.Errorf("--%s is not for pipetop export", name)
		}
	}
	if !set["interval"] {
		c.interval = defaultExportInterval
	}
	if _, _, err := net.SplitHostPort(c.listen); err != nil {
		return fmt.Errorf("--listen %q: want host:port, e.g. %s (or :9464 for every interface): %v", c.listen, defaultListen, err)
	}
	return nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "run" {
		return runCommand(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 {
		if cmd, ok := runCommands[args[0]]; ok {
			return cmd(ctx, args[1:], stdout, stderr)
		}
	}
	c, err := parse(args, stderr)
	if err != nil {
		return err
	}
	if c.profile != "" {
		stop, err := startProfile(c.profile)
		if err != nil {
			return err
		}
		defer stop()
	}
	switch {
	case c.cmd == "ls":
		return list(ctx, stdout, c.json)
	case c.cmd == "export":
		return serveMetrics(ctx, c, stderr)
	case c.once || c.json:
		return snapshotOnce(ctx, c, stdout)
	}
	return interactive(ctx, c)
}

// startProfile starts a CPU profile written to path; stop ends it.
func startProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile %s: %w", path, err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
