package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/tui"
	"github.com/pipetop/pipetop/tui/settings"
)

// config is the parsed command line of the view and of attach, ls and
// export, which share its flags.
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
	// From the settings file (tui/settings).
	hidden []string
	sort   string
	theme  string
	keys   *tui.Keys
	// The flags read by finish: --window's label and --config's file.
	windowLabel, cfgPath string
}

// showFunc runs the view, ls or export on its parsed command line.
type showFunc func(ctx context.Context, c config, stdout, stderr io.Writer) error

// viewFlags is the flags column of the view, attach (cmd), ls and
// export: the view's flags, and show run on them (with --cpuprofile).
func viewFlags(cmd string, show showFunc) func(*flag.FlagSet) runFunc {
	return func(fs *flag.FlagSet) runFunc {
		c := &config{cmd: cmd}
		c.declare(fs)
		return func(ctx context.Context, pos []string, stdout, stderr io.Writer) error {
			if err := c.finish(fs, pos); err != nil {
				return err
			}
			if c.profile != "" {
				stop, err := startProfile(c.profile)
				if err != nil {
					return err
				}
				defer stop()
			}
			return show(ctx, *c, stdout, stderr)
		}
	}
}

// parse parses a command line of the view, attach, ls or export (args,
// the name first) as run does, without running it.
func parse(args []string, stderr io.Writer) (config, error) {
	cmd, args := lookup(args)
	fs := cmd.flagSet(stderr)
	c := config{cmd: cmd.name}
	c.declare(fs)
	pos, err := cmd.parse(fs, args)
	if err == nil {
		err = c.finish(fs, pos)
	}
	return c, err
}

// declare declares the view's flags on fs.
func (c *config) declare(fs *flag.FlagSet) {
	fs.BoolVar(&c.once, "once", false, "print one text snapshot after collecting for --interval, then exit")
	fs.BoolVar(&c.json, "json", false, "print one JSON snapshot (with ls: the list as JSON), then exit")
	fs.DurationVar(&c.interval, "interval", time.Second, "refresh interval (and collection time of --once/--json; export: 5s)")
	fs.StringVar(&c.windowLabel, "window", "5s", "summary window: 5s, 30s, 2m or all (export: 30s)")
	fs.StringVar(&c.listen, "listen", defaultListen, "export: serve /metrics at this `host:port`")
	fs.IntVar(&c.width, "width", 0, "width of the --once text (default: the terminal's, else 100)")
	fs.BoolVar(&c.noGPU, "no-gpu", false, "do not load NVML")
	fs.BoolVar(&c.readOnly, "readonly", false, "never send signals from the process table (F9 is refused)")
	fs.StringVar(&c.profile, "cpuprofile", "", "write a Go CPU profile of this run to `file`")
	fs.StringVar(&c.prometheus, "prometheus", "", "read the run from the Prometheus server at `URL` (every host's pipetop export) instead of local sockets: pipetop --prometheus URL [RUN]")
	fs.IntVar(&c.rank, "rank", -1, "with --prometheus: the rank whose flame bar, trainer and host are shown; -1 is the lowest")
	fs.StringVar(&c.cfgPath, "config", "", "settings `file` (default: $XDG_CONFIG_HOME or ~/.config, /pipetop/config.toml, when it exists)")
}

// finish applies the settings file and checks the command line, pos its
// arguments.
func (c *config) finish(fs *flag.FlagSet, pos []string) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := c.settings(c.cfgPath, set); err != nil {
		return err
	}
	if err := c.check(pos, set); err != nil {
		return usageError{err}
	}
	return nil
}

// settings applies the settings file to the view (not to export or ls);
// flags given on the command line win.
func (c *config) settings(path string, set map[string]bool) error {
	if c.cmd == "export" || c.cmd == "ls" {
		if path != "" {
			return usageError{fmt.Errorf("--config is not for pipetop %s", c.cmd)}
		}
		return nil
	}
	optional := path == ""
	if optional {
		path = settings.DefaultPath()
	}
	if path == "" {
		return nil
	}
	s, err := settings.Load(path, optional)
	if err != nil {
		return err
	}
	if s.Refresh > 0 && !set["interval"] {
		c.interval = s.Refresh
	}
	if s.Window != "" && !set["window"] {
		c.windowLabel = s.Window
	}
	c.hidden, c.sort, c.theme, c.keys = s.Hidden, s.Sort, s.Theme, &s.Keys
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
func (c *config) check(pos []string, set map[string]bool) error {
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
	window := c.windowLabel
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
